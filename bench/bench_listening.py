"""Listening: every available keyword engine over the fixture corpus, side by side.

Engines: "vosk" (voicesnap.spotters.vosk_spotter, when a Vosk English model is
found), "pocketsphinx" (the peer in bench/peers.py) and whatever
``bench/enrolled_setup.py`` offers ("enrolled", "combined") through its
``engines(tmpdir) -> {name: factory}`` hook. A missing engine gives one row that
says why, never a silent gap. The harness and the metrics: bench/spotting.py.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable

from . import Row, area_main, row_line, scratch_data_dir
from .spotting import claim_open_row, claim_rows, corpus, run_engine, settle_rows, summarize, tail_noise_rows

AREA = "listening"
# Where CI and this project's machines keep the small English model when no
# option/env/data-dir model is installed (see .ci/vosk-model.sh).
FALLBACK_MODELS = (
    Path.home() / ".cache" / "voicesnap-ci" / "vosk-model-small-en-us-aar-0.3.45",
    Path("/tmp/vm_0.3.45/x/assets/model-en-us"),
)


def _vosk_factory() -> tuple[Callable[[], Any] | None, str]:
    """A factory that loads the model once (in the engine's own process), or why there is none."""
    if importlib.util.find_spec("voicesnap.spotters.vosk_spotter") is None:
        return None, "voicesnap.spotters.vosk_spotter is not there yet"
    if importlib.util.find_spec("vosk") is None:
        return None, "the vosk package is not installed"
    path: Path | None = None
    try:
        from voicesnap.models import find_model

        path = find_model("en")
    except Exception as exc:  # ModelError (or an older models module): try the CI cache
        reason = str(exc)
        path = next((p for p in FALLBACK_MODELS if (p / "am").is_dir()), None)
        if path is None:
            return None, f"no Vosk English model ({reason})"
    mod = importlib.import_module("voicesnap.spotters.vosk_spotter")
    cache: dict[str, Any] = {}

    def factory() -> Any:
        if "model" not in cache:
            loader = getattr(mod, "load_model", None)
            cache["model"] = loader(path) if loader else path
        return mod.VoskSpotter(cache["model"])

    return factory, str(path)


def _gated_factory() -> tuple[Callable[[], Any] | None, str]:
    """Vosk behind the speech gate (voicesnap.spotters.gate), as voicesnap play runs it by default."""
    vosk, why = _vosk_factory()
    if vosk is None:
        return None, why
    from voicesnap.spotters.gate import SpeechGate

    def factory() -> Any:
        return SpeechGate(vosk(), channel=0)

    return factory, f"speech gate in front of vosk ({why})"


KEYWORD_FALLBACK = Path.home() / ".cache" / "voicesnap-ci" / "openwakeword-0.5.1-features"


def _keyword_factory(gate: bool = False) -> tuple[Callable[[], Any] | None, str]:
    """The keyword model's spotter (voicesnap.spotters.keyword), or why it cannot run; ``gate``: its
    embedding network asleep away from speech, as play runs it unless --no-gate."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None, "onnxruntime is not installed"
    from voicesnap.keyword import KeywordModel
    from voicesnap.models import ModelError, find_model

    try:
        path = find_model("keyword")
    except ModelError as exc:
        if not (KEYWORD_FALLBACK / "embedding_model.onnx").is_file():
            return None, f"no keyword model ({exc})"
        path = KEYWORD_FALLBACK
    cache: dict[str, Any] = {}

    def factory() -> Any:
        from voicesnap.spotters.keyword import KeywordSpotter

        if "model" not in cache:
            cache["model"] = KeywordModel(path)
        return KeywordSpotter(cache["model"], gate=gate)

    return factory, (f"speech gate on the embedding network ({path})" if gate else str(path))


def _keyword_gated_factory() -> tuple[Callable[[], Any] | None, str]:
    return _keyword_factory(gate=True)


def _peer_factory() -> tuple[Callable[[], Any] | None, str]:
    from .peers import KWS_THRESHOLDS, PocketSphinxSpotter, pocketsphinx_available

    missing = pocketsphinx_available()
    if missing:
        return None, missing
    setting = ", ".join(f"{k} 1e{v}" for k, v in KWS_THRESHOLDS.items())
    return PocketSphinxSpotter, f"bundled en-us model, kws thresholds {setting}"


def _hook_factories(tmpdir: Path) -> tuple[dict[str, Callable[[], Any]], list[Row]]:
    here = Path(__file__).parent
    if not (here / "enrolled_setup.py").exists():
        return {}, [Row(AREA, "engine skipped", "n/a", note="enrolled/combined: bench/enrolled_setup.py is not there yet")]
    try:
        setup = importlib.import_module("bench.enrolled_setup")
        return dict(setup.engines(tmpdir)), []
    except Exception as exc:
        return {}, [Row(AREA, "engine skipped", "error", note=f"enrolled/combined: enrolled_setup.engines failed: {exc}")]


# every name engine_factories can offer (it offers those that can run now): what `python3 -m bench.spotting ENGINE`
# and bench_nocall take, said in their --help and checked before any work
ENGINE_NAMES = ("vosk", "vosk-gated", "keyword", "keyword-gated", "pocketsphinx", "enrolled", "keyword+enrolled",
                "combined", "combined-vosk")


def engine_factories(tmpdir: str | Path) -> tuple[dict[str, Callable[[], Any]], dict[str, str]]:
    """Every engine that can run now (name -> factory), and for each one what it is or why it cannot."""
    engines: dict[str, Callable[[], Any]] = {}
    about: dict[str, str] = {}
    for name, make in (("vosk", _vosk_factory), ("vosk-gated", _gated_factory), ("keyword", _keyword_factory),
                       ("keyword-gated", _keyword_gated_factory), ("pocketsphinx", _peer_factory)):
        factory, why = make()
        about[name] = why
        if factory is not None:
            engines[name] = factory
    hooked, notes = _hook_factories(Path(tmpdir))
    for row in notes:
        about["enrolled"] = about["combined"] = row.note
    engines.update(hooked)
    return engines, about


def run(quick: bool) -> list[Row]:
    fixtures = corpus(quick)
    audio = {f.name: f.read()[:, :1] for f in fixtures}
    rows: list[Row] = [Row(AREA, "corpus", len(fixtures), "files", "",
                           f"{sum(f.duration for f in fixtures) / 60:.1f} min, "
                           f"{sum(len(f.targets(('snap', 'snap pool'))) for f in fixtures)} calls"
                           + (" (--quick subset)" if quick else ""))]
    with scratch_data_dir() as tmp:  # enrollment profiles never touch a real data dir
        engines, about = engine_factories(tmp)
        for name, why in about.items():
            if name in engines:
                rows.append(Row(AREA, "engine", name, note=why))
            elif name in ("vosk", "vosk-gated", "keyword", "keyword-gated", "pocketsphinx"):
                rows.append(Row(AREA, "engine skipped", "n/a", note=f"{name}: {why}"))
        if "enrolled" in about and "enrolled" not in engines:
            rows.append(Row(AREA, "engine skipped", "n/a", note=about["enrolled"]))
        for name in engines:
            if name not in about:
                rows.append(Row(AREA, "engine", name, note="from bench/enrolled_setup.py"))
        plain = {}
        for name, factory in engines.items():
            result = plain[name] = run_engine(name, factory, fixtures, audio=audio)
            rows += summarize(result, fixtures, AREA)
            if name == "vosk":  # its main run is the worst case (claim open); the usual case and a game's mix
                rows += claim_open_row(result, fixtures, AREA)
                rows += claim_rows(name, factory, fixtures, audio, AREA, modes=("none", "mix"))
            if name == "combined":  # the engine play uses on one mic: does the table's line wait for it?
                rows += settle_rows(name, factory, fixtures, audio, AREA)
            if name in ("enrolled", "combined"):  # the near-miss check judges a call by its end
                rows += tail_noise_rows(name, factory, fixtures, AREA)
        from .echo_rows import echo_rows  # the same engines behind the echo canceller

        rows += echo_rows(fixtures, audio, engines, plain)
        if not quick:
            from .real_words import read_speech_rows, real_onset_rows, real_word_rows  # real people's words

            rows += real_word_rows(engines) + read_speech_rows(engines) + real_onset_rows()
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python3 -m bench.bench_listening [--quick]``: this area's rows alone (without an entry point the module
    ran nothing, said nothing and exited 0)."""
    return area_main("bench.bench_listening", __doc__, run, row_line, argv)


if __name__ == "__main__":
    sys.exit(main())
