"""Name checks for plugin args, with apimachinery util/validation's messages
(staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go)."""

from __future__ import annotations

from scheduler.config.pluginargs import (
    QUALIFIED_NAME_FMT,
    QUALIFIED_NAME_MSG,
    is_qualified_name,
    is_valid_label_value,
    regex_error,
)


def test_valid_names_and_values() -> None:
    for name in ("MyName", "my.name", "123-abc", "example.com/MyName", "kubernetes.io/hostname"):
        assert is_qualified_name(name) == [], name
    for value in ("", "MyValue", "my_value", "12345"):
        assert is_valid_label_value(value) == [], value


def test_regex_error_keeps_upstreams_double_space() -> None:
    assert regex_error("bad", "x+", "a", "b") == "bad (e.g. 'a',  or 'b', regex used for validation is 'x+')"
    assert regex_error("bad", "x+") == "bad (regex used for validation is 'x+')"


def test_qualified_name_errors() -> None:
    name_regex = regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
    assert is_qualified_name("/a") == ["prefix part must be non-empty"]
    assert is_qualified_name("a/") == ["name part must be non-empty", "name part " + name_regex]
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    assert is_qualified_name("-a") == ["name part " + name_regex]
    [err] = is_qualified_name("a/b/c")
    # v1.36 words a key with two slashes as a label key (apimachinery content.IsLabelKey).
    assert err.startswith("a valid label key " + QUALIFIED_NAME_MSG)
    assert err.endswith("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
    [err] = is_qualified_name("Example.com/a")
    assert err.startswith("prefix part a lowercase RFC 1123 subdomain")


def test_label_value_errors() -> None:
    assert is_valid_label_value("a" * 64)[0] == "must be no more than 63 characters"
    [err] = is_valid_label_value("-a")
    assert err.startswith("a valid label must be an empty string or consist of alphanumeric characters")
