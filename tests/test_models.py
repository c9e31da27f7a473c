"""Model discovery (option, environment, data dir), install from folder/zip/AAR, and the errors."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from voicesnap import models
from voicesnap.cli import main

# The real model CI provides, captured before the fixture below hides it.
REAL_EN_MODEL = os.environ.get("VOICESNAP_VOSK_MODEL")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(data))
    monkeypatch.delenv("VOICESNAP_VOSK_MODEL", raising=False)
    monkeypatch.delenv("VOICESNAP_SPK_MODEL", raising=False)
    return data


def _layout(root: Path, kind: str = "en") -> Path:
    """A folder with the files that make a model of this kind recognisable (not a working model)."""
    for marker in models.KINDS[kind].markers:
        (root / marker).parent.mkdir(parents=True, exist_ok=True)
        (root / marker).write_bytes(b"x")
    (root / "conf").mkdir(exist_ok=True)
    (root / "conf" / "model.conf").write_text("--beam=10.0\n")
    return root


def test_missing_model_error_names_every_fix(_isolated: Path) -> None:
    with pytest.raises(models.ModelError) as info:
        models.find_model("en")
    text = str(info.value)
    assert "voicesnap models download" in text and "voicesnap models install" in text
    assert "VOICESNAP_VOSK_MODEL" in text and str(_isolated / "models") in text
    with pytest.raises(models.ModelError, match="--kind spk.*VOICESNAP_SPK_MODEL"):
        models.find_model("spk")
    assert not _isolated.exists()  # looking never creates the data dir


def test_discovery_order_option_then_env_then_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    in_data = _layout(models.models_dir(create=True) / "vosk-model-small-en-us-0.15")
    assert models.find_model("en") == in_data
    from_env = _layout(tmp_path / "env-model")
    monkeypatch.setenv("VOICESNAP_VOSK_MODEL", str(from_env))
    assert models.find_model("en") == from_env
    from_option = _layout(tmp_path / "opt-model")
    assert models.find_model("en", option=from_option) == from_option
    assert [f.source for f in models.candidates("en", from_option)] == [
        "option", "environment (VOICESNAP_VOSK_MODEL)", "data dir"]


def test_wrong_option_or_env_is_an_error_not_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _layout(models.models_dir(create=True) / "vosk-model-small-en-us-0.15")
    with pytest.raises(models.ModelError, match="is not a small English speech model .*lacks am/final.mdl"):
        models.find_model("en", option=tmp_path)
    monkeypatch.setenv("VOICESNAP_VOSK_MODEL", str(tmp_path / "nowhere"))
    with pytest.raises(models.ModelError, match="VOICESNAP_VOSK_MODEL=.*fix or unset"):
        models.find_model("en")


def test_a_named_keyword_model_or_encoder_that_is_not_there_is_an_error_where_none_is_needed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not installed, play goes on without them; named and wrong, the player hears why instead."""
    from voicesnap.encoder import load_encoder
    from voicesnap.keyword import load_keyword_model

    monkeypatch.delenv("VOICESNAP_KEYWORD_MODEL", raising=False)
    monkeypatch.delenv("VOICESNAP_ENCODER_MODEL", raising=False)
    assert load_keyword_model() is None and load_encoder() is None  # an empty data dir: none, quietly
    monkeypatch.setenv("VOICESNAP_KEYWORD_MODEL", str(tmp_path / "nope"))
    monkeypatch.setenv("VOICESNAP_ENCODER_MODEL", str(tmp_path / "nope"))
    with pytest.raises(models.ModelError, match="VOICESNAP_KEYWORD_MODEL=.*nope is not a keyword model .*fix or unset"):
        load_keyword_model()
    with pytest.raises(models.ModelError, match="VOICESNAP_ENCODER_MODEL=.*nope is not a speaker encoder .*fix or unset"):
        load_encoder()


def test_a_data_folder_that_cannot_be_one_is_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    assert main(["--data-dir", str(afile), "players"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["--data-dir", str(afile / "below"), "doctor"]) != 0
    err = capsys.readouterr().err
    assert "cannot be made" in err and "Traceback" not in err


def test_kinds_are_told_apart(tmp_path: Path) -> None:
    _layout(models.models_dir(create=True) / "vosk-model-spk-0.4", "spk")
    assert models.find_model("spk").name == "vosk-model-spk-0.4"
    with pytest.raises(models.ModelError):
        models.find_model("en")


def test_install_from_folder_zip_and_aar(tmp_path: Path) -> None:
    src = _layout(tmp_path / "src" / "vosk-model-small-en-us-0.15")
    installed = models.install(src)
    assert installed == models.models_dir() / "vosk-model-small-en-us-0.15"
    assert models.is_model(installed) and models.find_model() == installed

    archive = tmp_path / "vosk-model-small-en-us-0.22.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in src.rglob("*"):
            z.write(f, Path("vosk-model-small-en-us-0.22") / f.relative_to(src))
    assert models.install(archive).name == "vosk-model-small-en-us-0.22"

    aar = tmp_path / "vosk-model-en-0.3.45.aar"  # Maven's Android package: model under assets/
    with zipfile.ZipFile(aar, "w") as z:
        z.writestr("AndroidManifest.xml", "<manifest/>")
        for f in src.rglob("*"):
            z.write(f, Path("assets/model-en-us") / f.relative_to(src))
    assert models.install(aar).name == "vosk-model-small-en-us-aar-0.3.45"
    assert sorted(p.name for p in models.models_dir().iterdir()) == [
        "vosk-model-small-en-us-0.15", "vosk-model-small-en-us-0.22", "vosk-model-small-en-us-aar-0.3.45"]


def test_install_refuses_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(models.ModelError, match="no such file"):
        models.install(tmp_path / "missing.zip")
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(models.ModelError, match="not a zip archive") as info:
        models.install(junk)
    # a corrupt .zip is a damaged download: "unpack it first" (what it once said) cannot be done to it
    assert "download it again" in str(info.value) and "unpack it first" not in str(info.value)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("README", "nothing here")
    with pytest.raises(models.ModelError, match=r"no small English speech model \(keyword spotting\) inside"):
        models.install(empty)
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("../../escape/am/final.mdl", "x")
    with pytest.raises(models.ModelError, match="unsafe path"):
        models.install(evil)
    # A failed install leaves nothing that discovery could pick up.
    assert [p for p in models.models_dir().iterdir() if not p.name.startswith(".")] == []
    assert list(models.models_dir().iterdir()) == []


def test_cli_where_list_install(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "where"]) == 2
    assert "voicesnap models download" in capsys.readouterr().err
    src = _layout(tmp_path / "vosk-model-small-en-us-0.15")
    assert main(["models", "install", str(src)]) == 0
    assert main(["models", "where"]) == 0
    where = capsys.readouterr().out.strip().splitlines()[-1]
    assert where == str(models.models_dir() / "vosk-model-small-en-us-0.15")
    assert main(["models"]) == 0
    listing = capsys.readouterr().out
    assert f"  in use: {where} (in the data folder)" in listing, listing
    assert main(["models", "install"]) == 2
    assert "needs a PATH" in capsys.readouterr().err


def test_models_list_says_in_words_which_model_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A screen reader read the list's marks as "star", "left bracket environment left paren ...", with the
    model not in use marked by a blank nobody hears."""
    assert main(["models", "install", str(_layout(tmp_path / "vosk-model-small-en-us-0.15"))]) == 0
    monkeypatch.setenv("VOICESNAP_VOSK_MODEL", str(_layout(tmp_path / "mine")))
    capsys.readouterr()
    assert main(["models"]) == 0
    listing = capsys.readouterr().out
    assert f"  in use: {tmp_path / 'mine'} (from the environment variable VOICESNAP_VOSK_MODEL)" in listing, listing
    assert (f"  also found, not used: {models.models_dir() / 'vosk-model-small-en-us-0.15'} (in the data folder)"
            in listing), listing
    assert "*" not in listing and "[" not in listing, listing


def test_cli_install_takes_the_path_after_an_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`install --kind en PATH` (the order the error messages once suggested) installs like `install PATH --kind en`."""
    src = _layout(tmp_path / "vosk-model-small-en-us-0.15")
    assert main(["models", "install", "--kind", "en", str(src)]) == 0
    assert (models.models_dir() / "vosk-model-small-en-us-0.15").is_dir()
    with pytest.raises(SystemExit):  # two stray words are still refused, not guessed at
        main(["models", "install", "--kind", "en", str(src), "extra"])
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["encoder", "keyword"])
def test_install_tells_a_copied_encoder_or_keyword_folder_by_its_files(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --kind both were refused as "no small English speech model" (the message never named
    --kind); with it, the encoder went in as vosk-model-encoder-..., a name models/README.md never gives."""
    src = _layout(tmp_path / "copied", kind)
    assert main(["models", "install", str(src)]) == 0, capsys.readouterr().err
    assert models.KINDS[kind].what in capsys.readouterr().out
    assert models.is_model(models.models_dir() / models.KINDS[kind].default_name, kind)
    assert main(["models", "where", "--kind", kind]) == 0


def test_installed_real_model_loads_in_vosk(tmp_path: Path) -> None:
    real = REAL_EN_MODEL
    if not real or not models.is_model(real):
        pytest.skip("no English Vosk model (VOICESNAP_VOSK_MODEL unset in the test session; .ci/run sets it)")
    import vosk

    vosk.SetLogLevel(-1)
    installed = models.install(real)
    assert vosk.Model(str(models.find_model())) is not None
    assert installed.parent == models.models_dir()


def test_installing_the_speaker_model_says_nothing_uses_it_yet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The spk model can be installed, but attribution does not read it: the player is told, not left to guess."""
    assert main(["models"]) == 0
    listing = capsys.readouterr().out
    assert "none installed (nothing uses it yet)" in listing and "models download --kind spk" not in listing
    src = _layout(tmp_path / "vosk-model-spk-0.4", "spk")
    assert main(["models", "install", str(src), "--kind", "spk"]) == 0
    out = capsys.readouterr().out
    assert "installed" in out and "does not use the Vosk speaker model yet" in out
    assert main(["models"]) == 0
    assert "spk: speaker model (x-vectors; not used yet)" in capsys.readouterr().out
    src = _layout(tmp_path / "vosk-model-small-en-us-0.15")
    assert main(["models", "install", str(src)]) == 0
    assert "speaker model" not in capsys.readouterr().out


def test_downloading_the_speaker_model_says_first_that_nothing_uses_it(capsys, monkeypatch, tmp_path):
    """The note came only after a download that succeeded; where it failed (or before minutes of it) it
    never said that nothing uses the model (models/README.md promises it does)."""
    from voicesnap import models

    def unreachable(*_a, **_k):
        raise models.ModelError("could not download vosk-model-spk-0.4 (the site cannot be reached)")

    monkeypatch.setattr(models, "download", unreachable)
    assert main(["--data-dir", str(tmp_path), "models", "download", "--kind", "spk"]) == 2
    got = capsys.readouterr()
    assert "does not use the Vosk speaker model" in got.out and "could not download" in got.err


@pytest.mark.parametrize("kind, needs, not_said", [
    ("en", "am/final.mdl", "Resemblyzer"),
    ("spk", "vosk-model-spk-0.4", "vosk-model-en .aar"),
    ("encoder", "Resemblyzer-0.1.4-py3-none-any.whl", "Vosk"),
    ("keyword", "openwakeword-0.5.1-py3-none-any.whl", "Vosk"),
])
def test_a_folder_with_no_model_names_what_that_kind_needs(
        kind: str, needs: str, not_said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`models install --kind encoder FOLDER` (and spk) advised a Vosk model folder, .zip or .aar."""
    folder = tmp_path / "notamodel"
    folder.mkdir()
    (folder / "readme.txt").write_text("no\n")
    assert main(["models", "install", "--kind", kind, str(folder)]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and needs in err and not_said not in err, err


def test_a_damaged_wheel_or_weights_file_for_the_encoder_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A corrupt wheel was read as torch weights ("damaged or unexpected weights file (UnpicklingError ...)"),
    naming neither the file nor what the encoder takes."""
    wheel = tmp_path / "Resemblyzer-0.1.4-py3-none-any.whl"
    wheel.write_bytes(b"cut short")
    assert main(["models", "install", "--kind", "encoder", str(wheel)]) == 2
    err = capsys.readouterr().err
    assert str(wheel) in err and "download Resemblyzer's wheel again" in err, err
    weights = tmp_path / "pretrained.pt"
    weights.write_bytes(b"not torch")
    assert main(["models", "install", "--kind", "encoder", str(weights)]) == 2
    err = capsys.readouterr().err
    assert str(weights) in err and "Resemblyzer-0.1.4-py3-none-any.whl" in err, err


def test_a_download_s_progress_is_a_line_each_step_where_it_is_not_a_terminal(tmp_path: Path) -> None:
    """The progress was drawn in place with carriage returns wherever it went: in a log, a pipe or a screen
    reader's capture every step ran into one line ("\\rdownloading w.whl:   6% ...\\rdownloading ...")."""
    import hashlib
    import io

    src = tmp_path / "w.whl"
    src.write_bytes(os.urandom(1 << 20))  # 16 blocks of 64 KiB: a step about every 10%
    out = io.StringIO()
    with models.fetch_pinned(src.as_uri(), hashlib.sha256(src.read_bytes()).hexdigest(), tmp_path / "m",
                             "the thing", models.ModelError, ("x", "y"), progress=out) as got:
        assert got.read_bytes() == src.read_bytes()
    lines = out.getvalue().split("\n")
    assert "\r" not in out.getvalue() and lines[-1] == "", out.getvalue()
    assert len(lines) > 5 and all(line.startswith("downloading w.whl: ") and line.endswith("% of 1.0 MB")
                                  for line in lines[:-1]), lines
    assert lines[-2] == "downloading w.whl: 100% of 1.0 MB"
