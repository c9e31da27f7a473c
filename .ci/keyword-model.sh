# Sourced by .ci/run: the keyword model's front end, openWakeWord 0.5.1's two feature networks
# (Apache-2.0), fetched by voicesnap's own downloader from PyPI (pinned URL and sha256,
# voicesnap/keyword.py) into the cache and exported, so the keyword tests and benchmarks run.
CACHE="${VOICESNAP_CI_CACHE:-$HOME/.cache/voicesnap-ci}"
KEYWORD_DIR="$CACHE/openwakeword-0.5.1-features"
if [ ! -f "$KEYWORD_DIR/embedding_model.onnx" ]; then
  mkdir -p "$CACHE"
  python3 -c "import sys; from pathlib import Path; from voicesnap import keyword; keyword.download(Path(sys.argv[1]))" \
      "$CACHE" || echo "ci: could not fetch the keyword model from PyPI; keyword tests will skip" >&2
fi
if [ -f "$KEYWORD_DIR/embedding_model.onnx" ]; then
  export VOICESNAP_KEYWORD_MODEL="$KEYWORD_DIR"
  echo "ci: keyword model at $KEYWORD_DIR"
fi
