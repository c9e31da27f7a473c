"""The repository's scripts read their arguments: --help prints usage and exits 0, a stray word is an
error. Each once ignored its arguments, so --help regenerated the committed fixtures (generate_players.py:
104 WAVs), ran a benchmark for minutes (bench_voices, real_words) or asked for a model
(generate_words.py); and ``python -m bench --only bogus`` printed an empty table with exit status 0.

Everything is called in-process with argv, so a regression fails here (wrong signature, no exit)
rather than running the job."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

ROOT = Path(__file__).resolve().parent.parent
AUDIO = ROOT / "tests" / "fixtures" / "audio"


def _script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_script_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built (generate.py)
    spec.loader.exec_module(module)
    return module


def _bench(name: str) -> Callable[..., Any]:
    main: Callable[..., Any] = getattr(importlib.import_module(f"bench.{name}"), "main")
    return main


MAINS: dict[str, Callable[[], Callable[..., Any]]] = {
    "generate": lambda: _script(AUDIO / "generate.py").main,
    "generate_players": lambda: _script(AUDIO / "generate_players.py").main,
    "generate_words": lambda: _script(AUDIO / "real" / "generate_words.py").main,
    "generate_slams": lambda: _script(AUDIO / "generate_slams.py").main,
    "bench_voices": lambda: _bench("bench_voices"),
    "real_words": lambda: _bench("real_words"),
    "bench": lambda: _bench("__main__"),
    "bench_channels": lambda: _bench("bench_channels"),
    "bench_playback": lambda: _bench("bench_playback"),
    # with no entry point these four ran nothing, said nothing and exited 0 (`python3 -m bench.bench_engine`)
    "bench_announcer": lambda: _bench("bench_announcer"),
    "bench_engine": lambda: _bench("bench_engine"),
    "bench_listening": lambda: _bench("bench_listening"),
    "bench_play": lambda: _bench("bench_play"),
    "bench_nocall": lambda: _bench("bench_nocall"),
    "bench_slam": lambda: _bench("bench_slam"),
    "echo_rows": lambda: _bench("echo_rows"),
    "gate_check": lambda: _bench("gate_check"),
    "slap_probe": lambda: _bench("slap_probe"),
    "noise_matched": lambda: _bench("noise_matched"),  # (took --help for its SNR: a traceback)
    "score_slower": lambda: _bench("score_slower"),
}


def test_every_bench_area_module_runs_alone() -> None:
    """README names the bench/bench_AREA.py modules; each is runnable as ``python3 -m bench.bench_AREA``."""
    areas = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    assert areas and all(a in MAINS for a in areas), sorted(set(areas) - set(MAINS))


def test_the_docs_name_every_bench_area() -> None:
    """README, docs/listening.md and docs/status.md each list `--only AREA`'s areas; the lists had fallen behind
    the modules (no `slam` anywhere, no `nocall` in two of them)."""
    import re

    areas = sorted(p.stem.removeprefix("bench_") for p in (ROOT / "bench").glob("bench_*.py"))
    lists = {}
    for doc in ("README.md", "docs/listening.md", "docs/status.md"):
        found = re.search(r"`--only\s+AREA`\s+for\s+one\s+area:\s+((?:`\w+`,\s+)+)the\s+`bench/bench_AREA\.py`",
                          (ROOT / doc).read_text())
        assert found, doc
        lists[doc] = sorted(re.findall(r"`(\w+)`", found.group(1)))
    assert lists == {doc: areas for doc in lists}


def test_the_bench_engine_names_are_known_before_any_work(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """bench.spotting's help named two of its nine engines, and bench_nocall took a misspelt one, rendered the
    hour's stream, then printed "n/a ...: not available". Both now name the engines and refuse another at once;
    the list holds every name the factories offer."""
    from bench.bench_listening import ENGINE_NAMES, engine_factories

    for name, argv in (("spotting", ["combind"]), ("bench_nocall", ["combind", "--minutes", "0.1"])):
        with pytest.raises(SystemExit) as info:
            _bench(name)(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and "no engine combind; the engines: vosk, vosk-gated" in err, (name, err)
    with pytest.raises(SystemExit):
        _bench("spotting")(["--help"])
    assert "keyword+enrolled, combined, combined-vosk" in " ".join(capsys.readouterr().out.split())
    factories, why = engine_factories(tmp_path)
    assert set(factories) | set(why) <= set(ENGINE_NAMES), set(factories) | set(why)


def test_score_slower_runs_with_no_probe_named(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Its documented form, ``python3 -m bench.score_slower``, stopped at once with "invalid choice: ['ideas']"
    (argparse checks a nargs="*" positional's default against its choices as one value). The run is stopped
    where it loads the model, after the arguments are read."""
    from voicesnap.spotters import vosk_spotter

    def loaded(path: str) -> None:
        raise RuntimeError("arguments read")

    monkeypatch.setattr(vosk_spotter, "load_model", loaded)
    with pytest.raises(RuntimeError, match="arguments read"):
        _bench("score_slower")([])
    with pytest.raises(SystemExit) as info:
        _bench("score_slower")(["nose"])
    assert info.value.code == 2 and "no probe nose" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(MAINS))
@pytest.mark.parametrize("argv, code, said", [
    (["--help"], 0, "usage:"),  # printed, and nothing else done (it regenerated 104 WAVs, or ran the bench)
    (["--no-such-option"], 2, "unrecognized arguments: --no-such-option"),
])
def test_help_prints_usage_and_an_unknown_option_is_an_error(name: str, argv: list[str], code: int, said: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    main = MAINS[name]()
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == code
    out = capsys.readouterr()
    assert (out.out.startswith(said) if code == 0 else said in out.err), out


def test_generate_refuses_a_category_it_does_not_have(capsys: pytest.CaptureFixture[str]) -> None:
    """``generate.py --only overlaps`` (for "overlap") regenerated nothing and exited 0: a typo looked
    like success."""
    with pytest.raises(SystemExit) as info:
        _script(AUDIO / "generate.py").main(["--only", "overlaps"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'overlaps'" in err and "overlap" in err, err


def test_bench_voices_refuses_a_part_it_does_not_have(capsys: pytest.CaptureFixture[str]) -> None:
    """A misspelt part was dropped and, with no part left, every part ran."""
    with pytest.raises(SystemExit) as info:
        _bench("bench_voices")(["tie"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "no part tie" in err and "ties" in err


def test_bench_only_an_unknown_area_is_an_error_naming_the_areas(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        _bench("__main__")(["--only", "bogus"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "no area bogus" in err and "engine" in err and "voices" in err


def test_bench_only_takes_an_area_in_any_case(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``--only Engine`` runs the engine area (the help says any case works); the area itself is stubbed."""
    from bench import Row

    ran: list[str] = []

    def fake_import(name: str) -> Any:
        ran.append(name)
        return types.SimpleNamespace(run=lambda quick: [Row(name, "m", 1.0)])

    bench_main = importlib.import_module("bench.__main__")
    monkeypatch.setattr(bench_main.importlib, "import_module", fake_import)
    assert bench_main.main(["--only", "Engine", "--only", "voices"]) == 0
    assert ran == ["bench.bench_engine", "bench.bench_voices"]


def test_generate_words_keeps_the_old_takes_when_a_run_fails(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """It deleted words/*/* before cutting, so a crash half way left the fixtures gone; now the takes are
    cut into a temporary folder and swapped in at the end (LICENSE.TXT beside them kept)."""
    gen = _script(AUDIO / "real" / "generate_words.py")
    here = tmp_path / "real"
    out = here / "words"
    (out / "the").mkdir(parents=True)
    (out / "the" / "1688_01.flac").write_bytes(b"old take")
    (out / "LICENSE.TXT").write_text("CC BY 4.0\n")
    source = tmp_path / "librispeech"
    (source / "1688").mkdir(parents=True)
    model = tmp_path / "model"
    model.mkdir()
    monkeypatch.setattr(gen, "HERE", here)
    monkeypatch.setattr(gen, "OUT", out)
    monkeypatch.setenv("VOICESNAP_VOSK_MODEL", str(model))
    monkeypatch.setitem(sys.modules, "vosk", types.SimpleNamespace(SetLogLevel=lambda level: None,
                                                                    Model=lambda path: object()))

    def crash(model: object, name: str, src: Path, dest: Path) -> dict[tuple[str, str], int]:
        (dest / "the").mkdir(parents=True)
        (dest / "the" / "1688_01.flac").write_bytes(b"half")
        raise RuntimeError("Vosk died half way")

    monkeypatch.setattr(gen, "cut_words", crash)
    with pytest.raises(RuntimeError):
        gen.main([str(source)])
    assert (out / "the" / "1688_01.flac").read_bytes() == b"old take"
    assert sorted(p.name for p in here.iterdir()) == ["words"]  # no temporary folder left

    def cut(model: object, name: str, src: Path, dest: Path) -> dict[tuple[str, str], int]:
        (dest / "and").mkdir(parents=True)
        (dest / "and" / "1688_01.flac").write_bytes(b"new take")
        return {("and", "1688"): 1}

    monkeypatch.setattr(gen, "cut_words", cut)
    assert gen.main([str(source)]) == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "LICENSE.TXT", "and/1688_01.flac"]
    assert (out / "LICENSE.TXT").read_text() == "CC BY 4.0\n"
    assert sorted(p.name for p in here.iterdir()) == ["words"]


def test_generate_players_keeps_the_old_fixtures_when_a_run_fails(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """It deleted players/ before writing, so a run that failed half way (espeak-ng missing a voice)
    left the committed fixtures gone; now they are written beside it and swapped in at the end."""
    gen = _script(AUDIO / "generate_players.py")
    out = tmp_path / "players"
    (out / "enroll").mkdir(parents=True)
    (out / "enroll" / "alice_snap_1.wav").write_bytes(b"old take")
    monkeypatch.setattr(gen, "HERE", tmp_path)
    monkeypatch.setattr(gen, "OUT", out)

    def crash() -> int:
        (gen.OUT / "enroll").mkdir(parents=True)
        (gen.OUT / "enroll" / "alice_snap_1.wav").write_bytes(b"half")
        raise RuntimeError("espeak-ng died half way")

    monkeypatch.setattr(gen, "generate", crash)
    with pytest.raises(RuntimeError):
        gen.main([])
    assert (out / "enroll" / "alice_snap_1.wav").read_bytes() == b"old take"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["players"]  # no temporary folder left
    assert gen.OUT == out

    def write() -> int:
        (gen.OUT / "heldout").mkdir(parents=True)
        (gen.OUT / "heldout" / "alice.wav").write_bytes(b"new")
        return 1

    monkeypatch.setattr(gen, "generate", write)
    assert gen.main([]) == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == ["heldout/alice.wav"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["players"]


def test_generate_keeps_the_old_corpus_when_a_run_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """generate.py wrote straight into corpus/: a run that failed part way left some fixtures
    regenerated and some not. Now a failed run leaves corpus/ as it was, --only replaces only its
    categories' files, and a whole run the folder (no file of a fixture that no longer exists)."""
    gen = _script(AUDIO / "generate.py")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("clean_alice.wav", "gone.wav"):
        (corpus / name).write_bytes(b"old")
    monkeypatch.setattr(gen, "CORPUS", corpus)

    def write(name: str, crash: bool = False) -> Callable[[], None]:
        def fn() -> None:
            (gen.CORPUS / name).write_bytes(b"new")
            if crash:
                raise RuntimeError("espeak-ng died half way")
        return fn

    monkeypatch.setattr(gen, "GENERATORS", {"clean": write("clean_alice.wav"), "overlap": write("o.wav", crash=True)})
    with pytest.raises(RuntimeError):
        gen.main(["--no-players"])
    assert {p.name: p.read_bytes() for p in corpus.iterdir()} == {"clean_alice.wav": b"old", "gone.wav": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]  # no temporary folder left
    assert gen.CORPUS == corpus
    monkeypatch.setattr(gen, "GENERATORS", {"clean": write("clean_alice.wav"), "overlap": write("o.wav")})
    assert gen.main(["--only", "clean"]) == 0
    assert {p.name: p.read_bytes() for p in corpus.iterdir()} == {"clean_alice.wav": b"new", "gone.wav": b"old"}
    assert gen.main(["--no-players"]) == 0
    assert sorted(p.name for p in corpus.iterdir()) == ["clean_alice.wav", "o.wav"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]
