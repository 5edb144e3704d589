#!/usr/bin/env bash
# CI stage 2: the oldest supported Ray (README "Supported Ray versions"), in its own venv.
# Smoke subset on RLlib's own sampling and learner loops (the speed layer's gate turns
# it off on untested Ray versions): every registered algorithm trains (two data-parallel
# learners, two iterations each), the speed-layer gate picks RLlib's path, and the
# README's main job runs to the end.
set -euo pipefail
cd "$(dirname "$0")/.."
OLDEST_RAY="$(python -c 'import re,tomllib;d=tomllib.load(open("pyproject.toml","rb"));print(next(re.search(r">=([0-9.]+)",s).group(1) for s in d["project"]["dependencies"] if s.startswith("ray[")))')"
VENV="${TMPDIR:-/tmp}/rllib-fair-ray-${OLDEST_RAY}"
rm -rf "$VENV"
python -m venv "$VENV"
"$VENV/bin/pip" install -q torch==2.13.0
"$VENV/bin/pip" install -q "ray[rllib]==${OLDEST_RAY}.0" -e ".[test]"
"$VENV/bin/python" -c "import ray; assert ray.__version__.startswith('${OLDEST_RAY}.'), ray.__version__; print('oldest supported Ray:', ray.__version__)"
"$VENV/bin/python" -m pytest -q tests/algorithms/test_scale_out.py -k two_ddp
"$VENV/bin/python" -m pytest -q tests/rllib/test_accel_gate.py
RESULTS="$(mktemp -d)"
"$VENV/bin/rllib-fair" train tuned_examples/ppo/lending-ppo.yaml --storage-path "$RESULTS"
rm -rf "$RESULTS"
