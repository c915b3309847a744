"""Raw YOLOv8/YOLO11 head decoding and NMS: the fast, vectorised path."""
