"""Datasets: readers, manifests, preprocessing and the synthetic generator."""

from harness.data.dataset import (
    Dataset,
    DatasetError,
    GroundTruth,
    Sample,
    Unreadable,
    class_map,
    load_coco,
    load_yolo,
)

__all__ = ["Dataset", "DatasetError", "GroundTruth", "Sample", "Unreadable", "class_map", "load_coco", "load_yolo"]
