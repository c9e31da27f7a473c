# Sourced by .ci/run: Resemblyzer 0.1.4's voice encoder (Apache-2.0) for voices'
# speaker embeddings. voicesnap's own downloader fetches the wheel from PyPI
# (pinned URL and sha256, voicesnap/encoder.py), converts its pretrained.pt to
# numpy without torch, and leaves the model folder in the cache; exported so
# the encoder tests and benchmarks run.
CACHE="${VOICESNAP_CI_CACHE:-$HOME/.cache/voicesnap-ci}"
ENCODER_DIR="$CACHE/resemblyzer-0.1.4"
if [ ! -f "$ENCODER_DIR/encoder.npz" ]; then
  mkdir -p "$CACHE"
  python3 -c "import sys; from pathlib import Path; from voicesnap import encoder; encoder.download(Path(sys.argv[1]))" \
      "$CACHE" || echo "ci: could not fetch the speaker encoder from PyPI; encoder tests will skip" >&2
fi
if [ -f "$ENCODER_DIR/encoder.npz" ]; then
  export VOICESNAP_ENCODER_MODEL="$ENCODER_DIR"
  echo "ci: speaker encoder at $ENCODER_DIR"
fi
