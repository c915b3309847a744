"""The doctor. Failure modes seen in the field, each injectable into a run of the harness' own paths and each
with the diagnosis that must name it; and the doctor, which injects every mode into one model's
run and tells whether a gate caught it and whether the diagnosis named it.

A mode is injected where the field made it: into the emulated HEF (calibration, a sigmoid left
out of the compiled model), into host code around a path (a wrapper changing images before the
path or detections after it, a wrong decoder over raw head outputs), into the dataset or the
evaluation settings, or into the HEF description the static checks read. Nothing in the gates or
the diagnosis knows which mode was injected: the doctor measures every run the same way (gates
against the baselines, the diagnosis over :class:`~harness.verdict.diagnosis_evidence.Evidence` with the same extra
measurements for all) and only then holds the top finding against the mode's expected name.

Baselines: the golden file of each path where its dataset manifest is the run's (the demo on all
its images); otherwise the clean run of that path on the same images, and the table says so.
Where the emulator refuses a model (e.g. an export whose weights are already quantized), the modes
that need an emulated HEF are reported as not run, and the host-side modes wrap the ONNX path.
"""
