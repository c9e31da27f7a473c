# Sourced by .ci/run: fetch Vosk's small English model from Maven Central (an
# Android AAR, Apache-2.0) into a cache, unpack it, and export its folder.
# Version 0.3.45 is the newest AAR that still carries the model files (0.3.75
# ships only a README).
VOSK_AAR_VERSION=0.3.45
CACHE="${VOICESNAP_CI_CACHE:-$HOME/.cache/voicesnap-ci}"
MODEL_DIR="$CACHE/vosk-model-small-en-us-aar-$VOSK_AAR_VERSION"
if [ ! -f "$MODEL_DIR/am/final.mdl" ]; then
  if command -v mvn >/dev/null 2>&1 \
     && mvn -q dependency:copy -Dartifact="com.alphacephei:vosk-model-en:$VOSK_AAR_VERSION:aar" \
            -DoutputDirectory="$CACHE/aar" >/dev/null 2>&1; then
    rm -rf "$CACHE/unpack" && mkdir -p "$CACHE/unpack"
    unzip -q -o "$CACHE/aar/vosk-model-en-$VOSK_AAR_VERSION.aar" 'assets/model-en-us/*' -d "$CACHE/unpack"
    rm -rf "$MODEL_DIR" && mv "$CACHE/unpack/assets/model-en-us" "$MODEL_DIR"
  else
    echo "ci: could not fetch com.alphacephei:vosk-model-en:$VOSK_AAR_VERSION; Vosk tests will skip" >&2
  fi
fi
if [ -f "$MODEL_DIR/am/final.mdl" ]; then
  export VOICESNAP_VOSK_MODEL="$MODEL_DIR"
  echo "ci: Vosk model at $MODEL_DIR"
fi
