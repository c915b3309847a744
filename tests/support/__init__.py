"""What the tests share and the harness never imports: synthetic results, fakes of hailo_platform and
hailo_sdk_client, encoders for those fakes, deliberately wrong decoders, YOLO26 exports made in code, the
plain numpy references (reference/), the HailoRT oracle's drivers (hailort_oracle/) and recorded data
(data/). tests/conftest.py puts tests/ on sys.path, so every test imports them as ``from support import ...``.
"""
