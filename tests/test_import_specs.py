"""Tests for the maintainer script ``tools/import_specs.py``."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from release_jars import release_jar

SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "import_specs.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_specs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


imp = _load_script()

LICENSE = """// Licensed to the Apache Software Foundation (ASF) under one or more
// contributor license agreements.  See the NOTICE file distributed with
// this work for additional information regarding copyright ownership.
//
//    http://www.apache.org/licenses/LICENSE-2.0
"""

QUIRKY_SPEC = (
    LICENSE
    + """
{
  "apiKey": 99,
  "type": "request",
  "listeners": ["broker"],
  "name": "QuirkRequest",
  // Version 1 adds Extra.  See http://example.com/x // not the end
  "validVersions": "0-1",
  /* a block comment
     spanning lines with "quotes" and // slashes */
  "flexibleVersions": "1+",
  "about": "Docs with a URL: https://kafka.apache.org/protocol and /* not a comment */",
  "fields": [
    { "name": "Url", "type": "string", "versions": "0+", "default": "http://a//b",
      "about": "A // inside a string." },
    { "name": "Escaped", "type": "string", "versions": "0+", "default": "q\\"//x" },
    { "name": "Max", "type": "int32", "versions": "0+", "default": "0x7fffffff" },
    { "name": "Id", "type": "uuid", "versions": "0+", "default": "AAAAAAAAAAAAAAAAAAAAAA" },
    { "name": "Client", "type": "string", "versions": "0+", "flexibleVersions": "none" },
    { "taggedVersions": "1+", "tag": "0", "name": "Extra", "type": "int32",
      "ignorable": true, "about": "tagged, no versions" }
  ]
}
}  trailing junk
"""
)


def _quiet(_: str) -> None:
    pass


def _collect() -> tuple[list[str], Any]:
    messages: list[str] = []
    return messages, messages.append


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------


def test_double_slash_inside_strings_survives() -> None:
    obj = imp.load_kafka_json(
        '{"a": "http://x.org//y", "b": "/* no */", "c": "\\"//"} // real comment',
        warn=_quiet,
    )
    assert obj == {"a": "http://x.org//y", "b": "/* no */", "c": '"//'}


def test_line_and_block_comments_removed() -> None:
    text = '// head\n{ /* one */ "a": 1, // tail\n /* multi\n line */ "b": [1, /**/ 2] }\n// end'
    assert imp.load_kafka_json(text, warn=_quiet) == {"a": 1, "b": [1, 2]}


def test_block_comment_does_not_glue_tokens() -> None:
    with pytest.raises(imp.SpecError):
        imp.load_kafka_json('{"a": 1/**/2}', warn=_quiet)


def test_comment_keeps_line_numbers_for_errors() -> None:
    with pytest.raises(imp.SpecError, match="line 4"):
        imp.load_kafka_json('/*\n\n*/ {"a":\n  nope}', warn=_quiet)


def test_unterminated_block_comment_is_an_error() -> None:
    with pytest.raises(imp.SpecError, match="unterminated"):
        imp.load_kafka_json('{"a": 1} /* open', warn=_quiet)


def test_trailing_tokens_tolerated_with_warning() -> None:
    messages, warn = _collect()
    obj = imp.load_kafka_json('{"a": {"b": 1}}\n}\n', source="X.json", warn=warn)
    assert obj == {"a": {"b": 1}}
    assert len(messages) == 1 and "X.json" in messages[0] and "trailing" in messages[0]


def test_no_warning_without_trailing_tokens() -> None:
    messages, warn = _collect()
    imp.load_kafka_json('{"a": 1}  // comment after root\n', warn=warn)
    assert messages == []


def test_root_must_be_object() -> None:
    with pytest.raises(imp.SpecError, match="not an object"):
        imp.load_kafka_json("[1, 2]", warn=_quiet)


def test_duplicate_keys_identical_warn_conflicting_fail() -> None:
    messages, warn = _collect()
    assert imp.load_kafka_json('{"v": "0+", "v": "0+"}', warn=warn) == {"v": "0+"}
    assert len(messages) == 1 and "duplicate" in messages[0]
    with pytest.raises(imp.SpecError, match="conflicting"):
        imp.load_kafka_json('{"v": "0+", "v": "1+"}', warn=_quiet)


# --------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------


def _normalised_quirky() -> dict[str, Any]:
    raw = imp.load_kafka_json(QUIRKY_SPEC, source="QuirkRequest.json", warn=_quiet)
    result: dict[str, Any] = imp.normalise_message(raw, source="QuirkRequest.json", warn=_quiet)
    return result


def test_string_tag_becomes_int_and_versions_filled() -> None:
    extra = _normalised_quirky()["fields"][-1]
    assert extra == {
        "name": "Extra",
        "type": "int32",
        "versions": "1+",
        "tag": 0,
        "taggedVersions": "1+",
        "ignorable": True,
        "about": "tagged, no versions",
    }
    assert list(extra) == ["name", "type", "versions", "tag", "taggedVersions", "ignorable", "about"]


def test_about_and_values_kept_verbatim() -> None:
    msg = _normalised_quirky()
    assert list(msg) == [
        "apiKey",
        "type",
        "name",
        "validVersions",
        "flexibleVersions",
        "listeners",
        "about",
        "fields",
    ]
    assert msg["about"] == "Docs with a URL: https://kafka.apache.org/protocol and /* not a comment */"
    by_name = {f["name"]: f for f in msg["fields"]}
    assert by_name["Url"]["about"] == "A // inside a string."
    assert list(by_name["Url"]) == ["name", "type", "versions", "default", "about"]
    assert "about" not in by_name["Max"]
    assert by_name["Url"]["default"] == "http://a//b"
    assert by_name["Escaped"]["default"] == 'q"//x'
    assert by_name["Max"]["default"] == "0x7fffffff"
    assert by_name["Id"]["default"] == "AAAAAAAAAAAAAAAAAAAAAA"
    assert by_name["Client"]["flexibleVersions"] == "none"


def test_field_order_is_preserved() -> None:
    names = [f["name"] for f in _normalised_quirky()["fields"]]
    assert names == ["Url", "Escaped", "Max", "Id", "Client", "Extra"]


def test_nested_fields_and_common_structs_normalised() -> None:
    raw = {
        "name": "M",
        "type": "data",
        "commonStructs": [
            {
                "name": "S",
                "versions": "0+",
                "about": "x",
                "fields": [
                    {"tag": "2", "taggedVersions": "3+", "type": "int8", "name": "T"},
                ],
            },
        ],
        "fields": [
            {
                "name": "A",
                "type": "[]S",
                "versions": "0+",
                "fields": [
                    {"name": "B", "type": "int8", "versions": "0+", "about": "y"},
                ],
            }
        ],
    }
    msg = imp.normalise_message(raw, warn=_quiet)
    assert msg["commonStructs"] == [
        {
            "name": "S",
            "versions": "0+",
            "about": "x",
            "fields": [
                {"name": "T", "type": "int8", "versions": "3+", "tag": 2, "taggedVersions": "3+"},
            ],
        }
    ]
    assert msg["fields"][0]["fields"] == [{"name": "B", "type": "int8", "versions": "0+", "about": "y"}]


@pytest.mark.parametrize("about", [None, 1, ["a"]])
def test_an_about_that_is_not_a_string_is_rejected(about: Any) -> None:
    field = {"name": "F", "type": "int8", "versions": "0+", "about": about}
    with pytest.raises(imp.SpecError, match="about must be a string"):
        imp.normalise_message({"name": "M", "type": "data", "fields": [field]}, warn=_quiet)
    with pytest.raises(imp.SpecError, match="about must be a string"):
        imp.normalise_message({"name": "M", "type": "data", "about": about, "fields": []}, warn=_quiet)


def test_unknown_keys_dropped_with_warning() -> None:
    messages, warn = _collect()
    raw = {
        "name": "M",
        "type": "data",
        "bogus": 1,
        "fields": [{"name": "F", "type": "int8", "versions": "0+", "weird": True}],
    }
    msg = imp.normalise_message(raw, source="M.json", warn=warn)
    assert "bogus" not in msg and "weird" not in msg["fields"][0]
    assert any("M.json" in m and "'bogus'" in m for m in messages)
    assert any("M.json" in m and "'weird'" in m for m in messages)


@pytest.mark.parametrize(
    "field",
    [
        {"name": "F", "type": "int8", "versions": "0+", "tag": "x", "taggedVersions": "0+"},
        {"name": "F", "type": "int8", "versions": "0+", "tag": -1, "taggedVersions": "0+"},
        {"name": "F", "type": "int8", "versions": "0+", "tag": 1},
        {"name": "F", "type": "int8"},
    ],
)
def test_invalid_fields_rejected(field: dict[str, Any]) -> None:
    with pytest.raises(imp.SpecError):
        imp.normalise_message({"name": "M", "type": "data", "fields": [field]}, warn=_quiet)


# --------------------------------------------------------------------------
# CLI: output files, determinism, --check, stale files
# --------------------------------------------------------------------------


def _make_input(tmp_path: Path) -> Path:
    src = tmp_path / "specs"
    src.mkdir()
    (src / "QuirkRequest.json").write_text(QUIRKY_SPEC, encoding="utf-8")
    (src / "Plain.json").write_text(
        LICENSE + '{"name": "Plain", "type": "data", "validVersions": "0",'
        ' "flexibleVersions": "none", "fields": []}\n',
        encoding="utf-8",
    )
    return src


def _run(tmp_path: Path, src: Path, out: Path, *extra: str) -> int:
    code: int = imp.main(
        ["--set", f"s1={src}", "--source", "s1=test", "--out", str(out), *extra],
        root=tmp_path,
    )
    return code


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_cli_writes_canonical_files(tmp_path: Path) -> None:
    src = _make_input(tmp_path)
    out = tmp_path / "schemas"
    assert _run(tmp_path, src, out) == 0
    files = _snapshot(out)
    assert sorted(files) == ["s1/Plain.json", "s1/QuirkRequest.json", "sets.json"]
    for data in files.values():
        text = data.decode("utf-8")
        assert "Licensed to the Apache" not in text and "Version 1 adds Extra" not in text
        assert text.endswith("}\n") or text.endswith("]\n")
    quirk = json.loads(files["s1/QuirkRequest.json"])
    assert quirk["fields"][0]["about"] == "A // inside a string."
    assert files["s1/QuirkRequest.json"].decode() == json.dumps(quirk, indent=2) + "\n"
    sets = json.loads(files["sets.json"])
    assert [s["name"] for s in sets] == ["s1"]
    assert sets[0]["dir"] == "s1" and sets[0]["source"] == "test"
    assert sets[0]["imported_from"] == "specs" and sets[0]["files"] == 2
    assert set(sets[0]["sha256"]) == {"Plain.json", "QuirkRequest.json"}
    assert len(sets[0]["sha256"]["Plain.json"]) == 64


def test_cli_output_is_deterministic(tmp_path: Path) -> None:
    src = _make_input(tmp_path)
    out1, out2 = tmp_path / "a", tmp_path / "b"
    assert _run(tmp_path, src, out1) == 0
    first = _snapshot(out1)
    assert _run(tmp_path, src, out1) == 0
    assert _snapshot(out1) == first
    assert _run(tmp_path, src, out2) == 0
    assert _snapshot(out2) == first


def test_check_detects_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _make_input(tmp_path)
    out = tmp_path / "schemas"
    assert _run(tmp_path, src, out, "--check") == 1  # nothing generated yet
    assert not out.exists()  # --check never writes
    assert _run(tmp_path, src, out) == 0
    assert _run(tmp_path, src, out, "--check") == 0

    target = out / "s1" / "Plain.json"
    target.write_text(target.read_text() + " ")
    capsys.readouterr()
    assert _run(tmp_path, src, out, "--check") == 1
    assert "changed: s1/Plain.json" in capsys.readouterr().out

    assert _run(tmp_path, src, out) == 0
    (src / "Plain.json").write_text('{"name": "Plain", "type": "data", "validVersions": "0-1", "fields": []}')
    assert _run(tmp_path, src, out, "--check") == 1  # input changed


def test_stale_files_detected_and_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _make_input(tmp_path)
    out = tmp_path / "schemas"
    assert _run(tmp_path, src, out) == 0
    (out / "s1" / "Gone.json").write_text("{}\n")
    capsys.readouterr()
    assert _run(tmp_path, src, out, "--check") == 1
    assert "stale: s1/Gone.json" in capsys.readouterr().out
    assert _run(tmp_path, src, out) == 0
    assert not (out / "s1" / "Gone.json").exists()
    assert _run(tmp_path, src, out, "--check") == 0


def test_invalid_input_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "specs"
    src.mkdir()
    (src / "Bad.json").write_text("{ nope")
    assert _run(tmp_path, src, tmp_path / "out") == 2
    assert not (tmp_path / "out").exists()


def test_repository_schemas_are_up_to_date() -> None:
    """CI guard: the committed schemas/ match the importer and the inputs (Kafka releases' jars)."""
    for _, source in imp.DEFAULT_SETS:
        release_jar(source.rsplit(":", 1)[1])  # skip (fail in CI) when a jar cannot be had
    assert imp.main(["--check"]) == 0


def _abouts(spec: dict[str, Any]) -> dict[str, str | None]:
    """Every ``about`` of a spec (None where there is none), by the path of names leading to it."""
    found: dict[str, str | None] = {"": spec.get("about")}

    def walk(fields: list[dict[str, Any]], path: str) -> None:
        for f in fields:
            here = f"{path}.{f['name']}"
            found[here] = f.get("about")
            walk(f.get("fields", []), here)

    for struct in spec.get("commonStructs", []):
        found[struct["name"]] = struct.get("about")
        walk(struct.get("fields", []), struct["name"])
    walk(spec.get("fields", []), "")
    return found


def test_repository_schemas_keep_kafkas_about_texts() -> None:
    """Every ``about`` of every spec of each imported set is the text of the release's own spec file:
    the same string at the same place, and written with the same JSON escapes."""
    schemas = SCRIPT.parent.parent / "schemas"
    for set_name, source in imp.DEFAULT_SETS:
        jar = release_jar(source.rsplit(":", 1)[1])
        texts = 0
        for file_name, data in sorted(jar.specs.items()):
            raw = data.decode("utf-8")
            upstream = _abouts(imp.load_kafka_json(raw, source=file_name, warn=_quiet))
            ours = _abouts(json.loads((schemas / set_name / file_name).read_text(encoding="utf-8")))
            assert ours == upstream, f"{set_name}/{file_name}"
            for about in filter(None, ours.values()):
                assert json.dumps(about, ensure_ascii=False) in raw, f"{set_name}/{file_name}: {about!r}"
                texts += 1
        assert texts > 1000, f"{set_name}: only {texts} about texts"


def _make_jar(tmp_path: Path, src: Path, version: str | None = "9.9.9") -> Path:
    jar = tmp_path / "kafka-clients-test.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("common/message/", b"")
        z.writestr("common/message/README.md", b"not a spec")
        z.writestr("common/message/nested/Other.json", b"{}")  # only the folder's own files count
        for path in sorted(src.glob("*.json")):
            z.writestr(f"common/message/{path.name}", path.read_bytes())
        if version is not None:
            z.writestr("kafka/kafka-version.properties", f"commitId=abc123\nversion={version}\n")
    return jar


def test_a_jar_is_a_set_source_and_its_release_is_recorded(tmp_path: Path) -> None:
    src = _make_input(tmp_path)
    jar = _make_jar(tmp_path, src)
    from_dir, from_jar = tmp_path / "a", tmp_path / "b"
    assert _run(tmp_path, src, from_dir) == 0
    code = imp.main(["--set", f"s1={jar}", "--source", "s1=test", "--out", str(from_jar)], root=tmp_path)
    assert code == 0
    a, b = _snapshot(from_dir), _snapshot(from_jar)
    del a["sets.json"], b["sets.json"]
    assert a == b
    entry = json.loads((from_jar / "sets.json").read_text())[0]
    assert entry["imported_from"] == "kafka-clients-test.jar" and "release" not in entry
    assert entry["jar_sha256"] == hashlib.sha256(jar.read_bytes()).hexdigest()
    assert (entry["kafka_version"], entry["commit"]) == ("9.9.9", "abc123")
    assert entry["sha256"] == json.loads((from_dir / "sets.json").read_text())[0]["sha256"]


def test_maven_coordinates_are_read_from_the_local_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _make_input(tmp_path)
    repo = tmp_path / "m2"
    target = repo / "org" / "example" / "specs" / "1.0" / "specs-1.0.jar"
    target.parent.mkdir(parents=True)
    _make_jar(tmp_path, src, version=None).rename(target)
    monkeypatch.setenv("KCODEC_M2_REPO", str(repo))
    out = tmp_path / "out"
    args = ["--set", "s1=maven:org.example:specs:1.0", "--source", "s1=t", "--out", str(out)]
    code = imp.main(args, root=tmp_path)
    assert code == 0
    entry = json.loads((out / "sets.json").read_text())[0]
    assert entry["release"] == "org.example:specs:1.0"
    assert entry["imported_from"] == "maven:org.example:specs:1.0"
    assert "kafka_version" not in entry and entry["files"] == 2


def test_a_bad_jar_source_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.jar").write_bytes(b"not a zip")
    assert imp.main(["--set", "s1=empty.jar", "--source", "s1=t", "--out", "out"], root=tmp_path) == 2
    assert "cannot read the jar" in capsys.readouterr().err
    assert imp.main(["--set", "s1=maven:only:two", "--source", "s1=t", "--out", "out"], root=tmp_path) == 2
    assert "GROUP:ARTIFACT:VERSION" in capsys.readouterr().err


def test_proposal_sets_survive_an_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _make_input(tmp_path)
    out = tmp_path / "schemas"
    assert _run(tmp_path, src, out) == 0
    proposal = {"name": "p", "dir": "p", "source": "ours", "proposal": "KIP-1", "files": 1}
    sets = json.loads((out / "sets.json").read_text())
    (out / "sets.json").write_text(json.dumps([*sets, proposal], indent=2) + "\n")
    (out / "p").mkdir()
    (out / "p" / "Plain.json").write_text("{}\n")
    capsys.readouterr()
    assert _run(tmp_path, src, out, "--check") == 0  # the proposal entry is expected, not drift
    assert _run(tmp_path, src, out) == 0
    assert json.loads((out / "sets.json").read_text())[-1] == proposal
    assert (out / "p" / "Plain.json").read_text() == "{}\n"
    assert "belongs to no current set" not in capsys.readouterr().err
    clash = imp.main(["--set", f"p={src}", "--source", "p=x", "--out", str(out)], root=tmp_path)
    assert clash == 2 and "is a proposal set" in capsys.readouterr().err
