#!/usr/bin/env bash
# Mutation testing of the gate code: mutmut mutates harness/verdict/gates.py and golden*.py and runs the
# verdict tests against each mutant; a mutant no test kills is a change to a gate no test notices.
# Not part of the CI test run (minutes to hours on a small machine). Needs mutmut (pip install mutmut).
#
#   tools/mutation.sh              run every mutant, then print the survivors
#   tools/mutation.sh 'harness.verdict.golden_weakness.x_weaknesses*'   only the mutants of one function (mutmut's names)
#   MUTATION_WORK=DIR tools/mutation.sh   keep the scratch copy (and mutmut's results) in DIR, resumable
#   PYTHON=.venv/bin/python tools/mutation.sh
#
# It works in a scratch copy of the package and its tests: nothing is written into the checkout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python}
work=${MUTATION_WORK:-$(mktemp -d -t hailo-harness-mutation-XXXXXX)}
tests=(tests/verdict/test_gates.py tests/verdict/test_golden.py tests/verdict/test_history.py
  tests/verdict/test_stages.py)
mkdir -p "$work"
if [ ! -f "$work/pyproject.toml" ]; then
  tar -C "$root" --exclude=__pycache__ -cf - harness tests pyproject.toml | tar -C "$work" -xf -
  present=()
  for t in "${tests[@]}"; do [ -f "$work/$t" ] && present+=("$t"); done
  selection=$(printf '"%s", ' "${present[@]}")
  cat >>"$work/pyproject.toml" <<TOML

[tool.mutmut]
source_paths = ["harness"]
only_mutate = ["harness/verdict/gates.py", "harness/verdict/golden.py", "harness/verdict/golden_weakness.py",
  "harness/verdict/golden_reading.py", "harness/verdict/golden_writing.py", "harness/verdict/golden_blessing.py",
  "harness/verdict/golden_journal.py"]
pytest_add_cli_args_test_selection = [${selection%, }]
pytest_add_cli_args = ["-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
TOML
fi
cd "$work"
echo "mutation work folder: $work"
"$python" -m mutmut run --max-children "${MUTATION_JOBS:-1}" "$@" || true
"$python" -m mutmut results
