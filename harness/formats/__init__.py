"""Device-side and host-side layouts, quantization and NMS buffer codecs (HailoRT semantics)."""
