# Sourced by .ci/run: Resemblyzer 0.1.4's voice encoder (Apache-2.0) for voices'
# speaker embeddings. voicesnap's own downloader fetches the wheel from PyPI
# (pinned URL and sha256, voicesnap/encoder.py), converts its pretrained.pt to
# numpy without torch, and leaves the model folder in the cache; exported so
# the encoder tests and benchmarks run.
source "$(dirname "${BASH_SOURCE[0]}")/pypi-model.sh"
fetch_pypi_model encoder resemblyzer-0.1.4 encoder.npz VOICESNAP_ENCODER_MODEL "speaker encoder"
