"""Does the speech gate cost calls? ``python3 -m bench.gate_check [--shifts 0,20,100] [--quick]``.

Vosk's results on a fixture change by a call or two when the same audio starts
20 ms later (the decoder's chunking and adaptation differ), and the gate starts
its recogniser at the first speech's pre-roll, not at the file's start. So one
run of each engine cannot tell the gate's effect from that chaos: this runs
plain Vosk and Vosk behind the gate over the corpus with the audio started
``shift`` ms late (the clock kept true), for several shifts, and prints the
totals side by side.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

from voicesnap.audio import ArraySource, AudioChunk
from voicesnap.corpus import merge, percentile, score

from .spotting import CALL_WORDS, COMMAND_WORDS, Factory, corpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.gate_check", description=__doc__)
    parser.add_argument("--shifts", default="0,20,100", help="start shifts in ms (comma-separated)")
    parser.add_argument("--quick", action="store_true", help="the --quick subset of the corpus")
    args = parser.parse_args(argv)
    from voicesnap.models import find_model
    from voicesnap.spotters.gate import SpeechGate
    from voicesnap.spotters.vosk_spotter import VoskSpotter, load_model

    try:
        model = load_model(find_model("en", os.environ.get("VOICESNAP_VOSK_MODEL")))
    except Exception as exc:
        print(f"no Vosk English model: {exc}")
        return 2
    fixtures = corpus(args.quick)
    audio = {f.name: f.read()[:, :1] for f in fixtures}
    engines: dict[str, Factory] = {"vosk": lambda: VoskSpotter(model, channel=0),
                                   "vosk-gated": lambda: SpeechGate(VoskSpotter(model, channel=0), channel=0)}
    print(f"{'engine':11} {'shift':>5} {'calls':>8} {'false':>5} {'cmds':>6} {'false cmd':>9} "
          f"{'onset p95':>9} {'lat p50/p95':>12} {'fed':>5}")
    for shift in (int(s) for s in args.shifts.split(",")):
        for name, make in engines.items():
            calls, words, fed, total = [], [], 0, 0
            for fx in fixtures:
                k = shift * fx.rate // 1000
                spotter = make()
                found = []
                for chunk in ArraySource(audio[fx.name][k:], fx.rate, chunk_frames=fx.rate // 50):
                    moved = AudioChunk(chunk.rate, chunk.width, chunk.channels, chunk.start + k, chunk.samples)
                    # emitted at this chunk's end, as bench.spotting.feed stamps it
                    found += [replace(d, detected_at=moved.end / moved.rate) for d in spotter.accept(moved)]
                found += spotter.flush()
                calls.append(score(fx, found, words=CALL_WORDS))
                words.append(score(fx, found, words=(*CALL_WORDS, *COMMAND_WORDS)))
                stats = getattr(spotter, "stats", None)
                if stats:
                    fed += stats()["fed"]
                    total += stats()["frames"]
            c, w = merge(calls), merge(words)
            cmd_hits = sum(1 for m in w.hits if m.segment.text in COMMAND_WORDS)
            cmd_targets = sum(len(f.targets(COMMAND_WORDS)) for f in fixtures)
            false_calls = sum(1 for _, d in w.false if d.word in CALL_WORDS)
            false_cmds = sum(1 for _, d in w.false if d.word in COMMAND_WORDS)
            onset = percentile([abs(x) * 1000 for x in c.onset_errors], 95)
            lat = [x * 1000 for x in c.latencies]
            share = f"{fed / total:.2f}" if total else "1"
            print(f"{name:11} {shift:5} {len(c.hits):4}/{c.targets:<3} {false_calls:5} {cmd_hits:3}/{cmd_targets:<2} "
                  f"{false_cmds:9} {onset:7.1f}ms {percentile(lat, 50):5.0f}/{percentile(lat, 95):4.0f}ms {share:>5}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
