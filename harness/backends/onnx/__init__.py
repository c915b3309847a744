"""onnxruntime backend."""
