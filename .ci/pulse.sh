# Sourced by .ci/run (bash): virtual audio devices for the microphone tests.
#
# A user-mode PulseAudio daemon with two null sinks:
#   voicesnap_mic  (16 kHz mono) whose monitor is the default source: the virtual
#                  microphone; tests feed it with `paplay --device=voicesnap_mic`.
#   voicesnap_spk  the default sink: the virtual speaker.
# PortAudio (Debian's build has no PulseAudio host API) reaches it through the
# ALSA "pulse"/"default" devices that libasound2-plugins provides.
# A writer of faint noise stays on the mic sink: an idle null-sink monitor delivers
# nothing, which stalls and time-compresses an open input stream. Noise (white,
# about -70 dBFS, like a quiet room through a real microphone), not digital
# silence: voicesnap takes seconds of exact zeros for a muted or vanished
# microphone and pauses the game.
# A keeper records the mic's monitor at 20 ms all along, and the script returns once a new record
# stream gets audio at once: a stream that connects to a monitor nobody else is recording waits
# 0.5-2 s for its first audio (14 of 18 processes' first PortAudio streams did, 2026-12-03), and
# the timing tests failed on it ("the microphone delivered nothing for 1 s"). tests/virtual_mic.py
# does the same for the tests' own sinks.
# Idempotent: sourcing it twice reuses the running daemon (unless VOICESNAP_PULSE_FRESH=1).

export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/voicesnap-xdg-$(id -u)}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true
export PULSE_SERVER="unix:$XDG_RUNTIME_DIR/pulse/native"
export VOICESNAP_TEST_MIC_SINK=voicesnap_mic
export VOICESNAP_TEST_SPEAKER_SINK=voicesnap_spk

_vs_pulse_up() { pactl info >/dev/null 2>&1; }
# Stop the room-noise writer, the monitor's keeper and the daemon (sox ends with the writer). The pid
# files go too: a process just killed still answers `kill -0` for a moment (and a zombie does until it
# is reaped), and a restart that read its pid file then started no writer, so the new mic was silent.
_vs_pulse_stop() {
  local f
  for f in "$XDG_RUNTIME_DIR/voicesnap-silence.pid" "$XDG_RUNTIME_DIR/voicesnap-keeper.pid"; do
    kill "$(cat "$f" 2>/dev/null)" 2>/dev/null || true
    rm -f "$f"
  done
  pactl exit 2>/dev/null || true
}
# A pid file's process is running (a zombie is not).
_vs_alive() {
  [ -f "$1" ] || return 1
  local state
  state=$(ps -o stat= -p "$(cat "$1")" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}
# Milliseconds until a new record stream on the mic's monitor delivers its first 20 ms.
_vs_first_audio_ms() {
  local t0
  t0=$(date +%s%N)
  timeout 5 parec --device=voicesnap_mic.monitor --format=s16le --rate=16000 --channels=1 --latency-msec=20 \
    2>/dev/null | head -c 640 >/dev/null
  echo $(( ($(date +%s%N) - t0) / 1000000 ))
}

if ! command -v pulseaudio >/dev/null 2>&1; then
  echo "ci: pulseaudio not installed; microphone tests will skip" >&2
else
  # VOICESNAP_PULSE_FRESH=1 (.ci/run): stop a daemon an earlier run or shell left on this runtime dir
  # first, so that every CI run starts from the same state. (One reused after an hour of runs failed
  # the timing tests; the "0.21 s per second" it seemed to show was a test's own undrained pipe.)
  if [ "${VOICESNAP_PULSE_FRESH:-0}" = 1 ] && _vs_pulse_up; then
    _vs_pulse_stop
    for _ in $(seq 1 50); do _vs_pulse_up || break; sleep 0.1; done
  fi
  if ! _vs_pulse_up; then
    _vs_started=1
    pulseaudio --daemonize=yes --exit-idle-time=-1 -n --disable-shm=yes --enable-memfd=no \
      --load=module-native-protocol-unix \
      --load="module-null-sink sink_name=voicesnap_mic rate=16000 channels=1 sink_properties=device.description=voicesnap_virtual_mic" \
      --load="module-null-sink sink_name=voicesnap_spk rate=48000 channels=2 sink_properties=device.description=voicesnap_virtual_speaker" \
      >/dev/null 2>&1 || echo "ci: could not start pulseaudio; microphone tests will skip" >&2
    for _ in $(seq 1 50); do _vs_pulse_up && break; sleep 0.1; done
  fi
  if _vs_pulse_up; then
    pactl set-default-source voicesnap_mic.monitor || echo "ci: could not set the default source" >&2
    pactl set-default-sink voicesnap_spk || echo "ci: could not set the default sink" >&2
    # One room-noise writer on the mic sink (kept across re-sourcing via its pid file: pacat's;
    # sox ends with it).
    _vs_pid_file="$XDG_RUNTIME_DIR/voicesnap-silence.pid"
    if ! _vs_alive "$_vs_pid_file"; then
      if command -v sox >/dev/null 2>&1; then
        sox -q -n -t raw -r 16000 -c 1 -b 16 -e signed-integer - synth whitenoise vol 0.001 2>/dev/null \
          | pacat --playback --device=voicesnap_mic --format=s16le --rate=16000 --channels=1 \
              --latency-msec=20 >/dev/null 2>&1 &
      else
        echo "ci: sox missing: the virtual microphone gets digital silence (the game will take it as muted)" >&2
        pacat --playback --device=voicesnap_mic --format=s16le --rate=16000 --channels=1 \
          --latency-msec=20 </dev/zero >/dev/null 2>&1 &
      fi
      echo $! >"$_vs_pid_file"
      disown 2>/dev/null || true
    fi
    _vs_keeper_file="$XDG_RUNTIME_DIR/voicesnap-keeper.pid"
    if ! _vs_alive "$_vs_keeper_file"; then
      parec --device=voicesnap_mic.monitor --format=s16le --rate=16000 --channels=1 --latency-msec=20 \
        >/dev/null 2>&1 &
      echo $! >"$_vs_keeper_file"
      disown 2>/dev/null || true
    fi
    _vs_waits=""
    for _ in $(seq 1 10); do
      _vs_ms=$(_vs_first_audio_ms)
      _vs_waits="$_vs_waits $_vs_ms"
      [ "$_vs_ms" -lt 150 ] && break
    done
    [ "$_vs_ms" -lt 150 ] || echo "ci: the virtual microphone is slow to deliver (first audio after:$_vs_waits ms)" >&2
    echo "ci: virtual audio devices up (mic sink voicesnap_mic, speaker sink voicesnap_spk)"
    # Stop what this script started when the sourcing shell exits (unless it has its own EXIT trap).
    if [ "${_vs_started:-0}" = 1 ] && [ -z "$(trap -p EXIT)" ]; then
      trap _vs_pulse_stop EXIT
    fi
  fi
fi
