"""Find, download or install the models (Vosk English recogniser and speaker model, speaker encoder,
keyword model).

Models are looked up in this order: --model (where a command takes one), the
environment variable (VOICESNAP_VOSK_MODEL / VOICESNAP_SPK_MODEL /
VOICESNAP_ENCODER_MODEL / VOICESNAP_KEYWORD_MODEL), then the data directory's models/ folder, where
`download` and `install` put them.
"""

from __future__ import annotations

import argparse

from .. import models


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", default="list", choices=["list", "where", "download", "install"],
                        help="list (default): every model found; where: the one used; download: fetch with "
                        "vosk's downloader; install PATH: copy a model folder, .zip or Maven .aar")
    parser.add_argument("path", nargs="?", help="for install: a model folder, .zip or .aar")
    parser.add_argument("--kind", choices=sorted(models.KINDS), default=None,
                        help="en: English recogniser (default; install tells an encoder or keyword model folder or "
                        "wheel by its files or name); spk: Vosk speaker model (not used yet); encoder: speaker "
                        "encoder (Resemblyzer's weights from PyPI, converted; 'download encoder' works too); "
                        "keyword: the keyword model's speech embedding (openWakeWord's feature models from PyPI; "
                        "'download keyword' works too)")
    parser.add_argument("--name", help="download/install under this model name")


SPK_UNUSED = ("note: voicesnap does not use the Vosk speaker model yet; voices are told apart by the speaker "
              "encoder (voicesnap models download encoder)")


def take_extra(args: argparse.Namespace, extra: list[str]) -> bool:
    """A PATH given after an option (`models install --kind encoder FILE`): the same as before it."""
    if len(extra) == 1 and not extra[0].startswith("-") and args.path is None:
        args.path = extra[0]
        return True
    return False


def _source_words(source: str) -> str:
    """Where a model was found, in words: "environment (VOICESNAP_VOSK_MODEL)" -> "from the environment
    variable VOICESNAP_VOSK_MODEL"."""
    if source.startswith("environment (") and source.endswith(")"):
        return f"from the environment variable {source[len('environment ('):-1]}"
    return {"option": "given with --model", "data dir": "in the data folder"}.get(source, source)


def run(args: argparse.Namespace) -> int:
    data = getattr(args, "data_dir", None)
    if args.action in ("download", "where") and args.path in models.KINDS:  # `models download encoder`
        args.kind, args.path = args.path, None
    if args.action == "install":
        if not args.path:
            raise models.ModelError("install needs a PATH: voicesnap models install vosk-model-small-en-us-0.15.zip")
        if args.kind is None:
            args.kind = models.guess_kind(args.path)
        path = models.install(args.path, args.kind, data, name=args.name)
        print(f"installed {models.KINDS[args.kind].what} at {path}")
        if args.kind == "spk":
            print(SPK_UNUSED)
        return 0
    if args.path:
        raise models.ModelError(f"'{args.action}' takes no PATH (only 'install' does)")
    if args.kind is None:
        args.kind = "en"
    if args.action == "download":
        if args.kind == "spk":  # before the download: it may fail, or take minutes, for nothing
            print(SPK_UNUSED)
        path = models.download(args.kind, data, name=args.name)
        print(f"{models.KINDS[args.kind].what} ready at {path}")
        return 0
    if args.action == "where":
        print(models.find_model(args.kind, None, data))
        return 0
    for key, kind in models.KINDS.items():
        print(f"{key}: {kind.what}; download: {kind.default_name}, {kind.size}; environment variable {kind.env}")
        try:
            used = models.find_model(key, None, data)
        except models.ModelError as exc:
            print("  none installed (nothing uses it yet)" if key == "spk" else f"  none usable: {exc}")
            continue
        for found in models.candidates(key, None, data):
            # in words: a "*" before the one used was read as "star", its source in brackets
            mark = "in use" if found.path == used else "also found, not used"
            print(f"  {mark}: {found.path} ({_source_words(found.source)})")
    print(f"models folder: {models.models_dir(data)}")
    return 0
