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


# The statuses HailoRT refuses a HEF with (hailort: hailort/libhailort/src/hef/hef.cpp, Hef::Impl::parse_hef_file
# and validate_hef_header; codes in include/hailo/hailort.h): a bad magic or header version is "not
# supported" (92); a size, checksum or proto that does not hold is "corrupted" (91); a file too short
# for its header fails the read itself (HAILO_FILE_OPERATION_FAILURE, 14).
HEF_NOT_SUPPORTED = "HAILO_HEF_NOT_SUPPORTED"
HEF_FILE_OPERATION_FAILURE = "HAILO_FILE_OPERATION_FAILURE"
HEF_CORRUPTED = "HAILO_HEF_FILE_CORRUPTED"


class HefError(HarnessError):
    """A file that is not a readable HEF. ``status`` names the libhailort status HailoRT refuses the same
    file with, where the refusal is one HailoRT makes too (hailort: hailort/libhailort/src/hef/hef.cpp)."""

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.status = status
