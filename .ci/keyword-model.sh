# Sourced by .ci/run: the keyword model's front end, openWakeWord 0.5.1's two feature networks
# (Apache-2.0), fetched by voicesnap's own downloader from PyPI (pinned URL and sha256,
# voicesnap/keyword.py) into the cache and exported, so the keyword tests and benchmarks run.
source "$(dirname "${BASH_SOURCE[0]}")/pypi-model.sh"
fetch_pypi_model keyword openwakeword-0.5.1-features embedding_model.onnx VOICESNAP_KEYWORD_MODEL "keyword model"
