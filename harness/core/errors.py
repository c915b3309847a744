"""Harness errors: each names the file or output, the field, what was found and what was expected."""


class HarnessError(Exception):
    """Base of every error the harness raises on bad input; the CLI prints it without a traceback."""


class SpecError(HarnessError):
    """An output spec, or arrays that do not match their spec."""


class MalformedBufferError(HarnessError):
    """A device or NMS buffer whose size or contents contradict its spec."""


class HeadPairingError(HarnessError):
    """The raw YOLO head outputs cannot be paired into (box, class) heads per grid."""


class GraphError(HarnessError):
    """An ONNX graph in which the detection heads cannot be found or cut."""


class HefError(HarnessError):
    """A file that is not a readable HEF."""
