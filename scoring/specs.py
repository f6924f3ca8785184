"""Judge specs: what a judge asks, in which words, and what answer it expects.

A spec is plain data (a frozen dataclass). Its identity is the sha256 of its canonical JSON, so a
stored JudgeVersion can never change silently. Two file shapes are read:

* Tribunal YAML (one judge per file, has a ``slug`` key), see ``judges/*.yaml``.
* EVA-style prompt files: a ``_shared`` section of variables injected into every prompt and a
  ``judge`` section of ``judge.<name>.<prompt_key>`` templates. ``system``/``system_prompt`` is the
  system template, ``user``/``user_prompt`` the user template; any other key ending in ``_prompt``
  (for example ``s2s_user_prompt``) becomes its own spec named ``<name>__<key minus _prompt>``.

Templates are filled with Python ``str.format`` (``{name}`` placeholders, ``{{ }}`` for literal
braces), the same syntax EVA uses, so both shapes render the same way.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scoring.audio import EVA_AUDIO_JUDGES, EVA_AUDIO_ROLES
from scoring.errors import TribunalError

LEVELS = ("turn", "conversation")
SCALES = ("binary", "ordinal", "weighted", "rubric")
TEMPLATE_SYNTAXES = ("tribunal", "format")


class SpecError(TribunalError, ValueError):
    """A judge spec file that cannot be turned into a JudgeSpec."""


@dataclass(frozen=True)
class Criterion:
    name: str
    threshold: float
    required: bool
    description: str = ""


@dataclass(frozen=True)
class JudgeSpec:
    slug: str
    version: str
    name: str
    description: str
    level: str
    scale: str
    scale_min: float | None
    scale_max: float | None
    failure_modes: tuple[str, ...]
    system_template: str
    user_template: str
    template_syntax: str = "tribunal"
    language_guidance: Mapping[str, str] = field(default_factory=dict)
    required_keys: tuple[str, ...] = ()
    sub_metrics: Mapping[str, float] = field(default_factory=dict)
    critical_sub_metrics: tuple[str, ...] = ()
    criteria: tuple[Criterion, ...] = ()
    model: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    # Beyond the shared interface; all optional so older callers keep working.
    shared_variables: Mapping[str, str] = field(default_factory=dict)
    sub_metric_thresholds: Mapping[str, float] = field(default_factory=dict)
    pass_threshold: float | None = None
    rating_labels: Mapping[str, str] = field(default_factory=dict)
    # The judge listens: each call carries the target's audio (a turn's segment, or the recording).
    needs_audio: bool = False
    # A conversation-level listening judge that hears one speaker ("agent" or "user"): that speaker's
    # turns, cut from the recording and joined; "" hears the whole recording.
    audio_role: str = ""
    # The EVA judge key whose profile (scoring.eva) says how this judge is called and answers.
    eva_profile: str = ""

    @property
    def key(self) -> str:
        return f"{self.slug}@{self.version}"


class MissingVariable(TribunalError, KeyError):
    """A template asks for a variable that the caller did not provide."""

    def __init__(self, name: str, *, judge: str = "", template: str = "", available: tuple[str, ...] = ()):
        super().__init__(name)
        self.name = name
        self.judge = judge
        self.template = template
        self.available = available

    def __str__(self) -> str:
        where = f" in the {self.template} template" if self.template else ""
        of = f" of judge {self.judge}" if self.judge else ""
        known = f" (provided: {', '.join(self.available)})" if self.available else ""
        return f"template variable '{self.name}'{where}{of} has no value{known}"


@dataclass(frozen=True)
class RenderedPrompt:
    system: str
    user: str


# --- dict round trip and identity ------------------------------------------------------------


def spec_to_dict(spec: JudgeSpec) -> dict[str, Any]:
    data: dict[str, Any] = {
        "slug": spec.slug,
        "version": spec.version,
        "name": spec.name,
        "description": spec.description,
        "level": spec.level,
        "scale": spec.scale,
        "scale_min": spec.scale_min,
        "scale_max": spec.scale_max,
        "failure_modes": list(spec.failure_modes),
        "system_template": spec.system_template,
        "user_template": spec.user_template,
        "template_syntax": spec.template_syntax,
        "language_guidance": dict(sorted(spec.language_guidance.items())),
        "required_keys": list(spec.required_keys),
        "sub_metrics": dict(spec.sub_metrics),
        "critical_sub_metrics": list(spec.critical_sub_metrics),
        "criteria": [
            {"name": c.name, "threshold": c.threshold, "required": c.required, "description": c.description}
            for c in spec.criteria
        ],
        "model": spec.model,
        "params": dict(spec.params),
        "source": spec.source,
        "shared_variables": dict(sorted(spec.shared_variables.items())),
        "sub_metric_thresholds": dict(spec.sub_metric_thresholds),
        "pass_threshold": spec.pass_threshold,
        "rating_labels": dict(spec.rating_labels),
        # Only when set, so the hash of every judge that reads text stays what it was.
        **({"needs_audio": True} if spec.needs_audio else {}),
        **({"audio_role": spec.audio_role} if spec.audio_role else {}),
    }
    if spec.eva_profile:  # only EVA specs carry it, so every other spec keeps its hash
        data["eva_profile"] = spec.eva_profile
    return data


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def spec_from_dict(d: Mapping[str, Any]) -> JudgeSpec:
    try:
        return JudgeSpec(
            slug=str(d["slug"]),
            version=str(d["version"]),
            name=str(d.get("name") or d["slug"]),
            description=str(d.get("description") or ""),
            level=str(d.get("level") or "turn"),
            scale=str(d.get("scale") or "ordinal"),
            scale_min=_float_or_none(d.get("scale_min")),
            scale_max=_float_or_none(d.get("scale_max")),
            failure_modes=tuple(str(m) for m in d.get("failure_modes") or ()),
            system_template=str(d.get("system_template") or ""),
            user_template=str(d["user_template"]),
            template_syntax=str(d.get("template_syntax") or "tribunal"),
            language_guidance={str(k): str(v) for k, v in (d.get("language_guidance") or {}).items()},
            required_keys=tuple(str(k) for k in d.get("required_keys") or ()),
            sub_metrics={str(k): float(v) for k, v in (d.get("sub_metrics") or {}).items()},
            critical_sub_metrics=tuple(str(k) for k in d.get("critical_sub_metrics") or ()),
            criteria=tuple(
                Criterion(
                    name=str(c["name"]),
                    threshold=float(c["threshold"]),
                    required=bool(c["required"]),
                    description=str(c.get("description") or ""),
                )
                for c in d.get("criteria") or ()
            ),
            model=None if d.get("model") is None else str(d["model"]),
            params=dict(d.get("params") or {}),
            source=str(d.get("source") or ""),
            shared_variables={str(k): str(v) for k, v in (d.get("shared_variables") or {}).items()},
            sub_metric_thresholds={str(k): float(v) for k, v in (d.get("sub_metric_thresholds") or {}).items()},
            pass_threshold=_float_or_none(d.get("pass_threshold")),
            rating_labels={str(k): str(v) for k, v in (d.get("rating_labels") or {}).items()},
            needs_audio=bool(d.get("needs_audio")),
            audio_role=str(d.get("audio_role") or ""),
            eva_profile=str(d.get("eva_profile") or ""),
        )
    except KeyError as exc:
        raise SpecError(f"judge spec is missing the key {exc.args[0]!r}") from exc


def spec_hash(spec: JudgeSpec) -> str:
    data = spec_to_dict(spec)
    data.pop("source", None)
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --- validation -------------------------------------------------------------------------------


def template_variables(template: str) -> tuple[str, ...]:
    """The top-level names a str.format template refers to, in order, without repeats."""
    names: list[str] = []
    for _literal, field_name, _spec, _conv in string.Formatter().parse(template):
        if field_name is None:
            continue
        base = field_name.split(".", 1)[0].split("[", 1)[0]
        if base and base not in names:
            names.append(base)
    return tuple(names)


def validate_spec(spec: JudgeSpec) -> None:
    """Raise SpecError when a spec is internally inconsistent."""
    label = spec.key
    if spec.level not in LEVELS:
        raise SpecError(f"{label}: level must be one of {LEVELS}, not {spec.level!r}")
    if spec.scale not in SCALES:
        raise SpecError(f"{label}: scale must be one of {SCALES}, not {spec.scale!r}")
    if spec.template_syntax not in TEMPLATE_SYNTAXES:
        raise SpecError(f"{label}: template_syntax must be one of {TEMPLATE_SYNTAXES}")
    for which, template in (("system", spec.system_template), ("user", spec.user_template)):
        try:
            template_variables(template)
        except ValueError as exc:
            raise SpecError(f"{label}: the {which} template is not a valid format string: {exc}") from exc
    if not spec.user_template.strip():
        raise SpecError(f"{label}: the user template is empty")
    bounded = spec.scale_min is not None and spec.scale_max is not None
    if spec.scale in ("binary", "ordinal") and bounded and spec.scale_min >= spec.scale_max:  # type: ignore[operator]
        raise SpecError(f"{label}: scale_min must be below scale_max")
    if spec.scale == "binary" and (spec.scale_min, spec.scale_max) not in ((0.0, 1.0), (None, None)):
        raise SpecError(f"{label}: a binary judge rates 0 or 1")
    if spec.audio_role not in ("", "agent", "user"):
        raise SpecError(f"{label}: audio_role must be agent or user, not {spec.audio_role!r}")
    if spec.audio_role and not spec.needs_audio:
        raise SpecError(f"{label}: audio_role needs needs_audio: true")
    if spec.scale == "weighted":
        if not spec.sub_metrics:
            raise SpecError(f"{label}: a weighted judge needs sub_metrics")
        total = sum(spec.sub_metrics.values())
        if abs(total - 1.0) > 1e-6:
            raise SpecError(f"{label}: sub-metric weights must sum to 1, they sum to {total:g}")
        for name in spec.critical_sub_metrics:
            if name not in spec.sub_metrics:
                raise SpecError(f"{label}: critical sub-metric {name!r} is not a sub-metric")
            if name not in spec.sub_metric_thresholds:
                raise SpecError(f"{label}: critical sub-metric {name!r} needs a threshold")
    if spec.scale == "rubric":
        if not spec.criteria:
            raise SpecError(f"{label}: a rubric judge needs criteria")
        if not any(c.required for c in spec.criteria):
            raise SpecError(f"{label}: a rubric judge needs at least one required criterion")
        names = [c.name for c in spec.criteria]
        if len(set(names)) != len(names):
            raise SpecError(f"{label}: criterion names must be unique")


# --- loading ----------------------------------------------------------------------------------


def _tribunal_spec(data: Mapping[str, Any], source: str) -> JudgeSpec:
    scale = data.get("scale")
    scale_info: Mapping[str, Any] = scale if isinstance(scale, Mapping) else {"type": scale}
    sub_metrics: dict[str, float] = {}
    thresholds: dict[str, float] = {}
    critical: list[str] = []
    for name, info in (data.get("sub_metrics") or {}).items():
        info = info if isinstance(info, Mapping) else {"weight": info}
        sub_metrics[str(name)] = float(info["weight"])
        if info.get("threshold") is not None:
            thresholds[str(name)] = float(info["threshold"])
        if info.get("critical"):
            critical.append(str(name))
    failure_modes = []
    for mode in data.get("failure_modes") or ():
        failure_modes.append(str(mode["name"]) if isinstance(mode, Mapping) else str(mode))
    schema = data.get("response_schema") or {}
    prompts = data.get("prompts") or {}
    spec = spec_from_dict(
        {
            "slug": data.get("slug"),
            "version": data.get("version"),
            "name": data.get("name"),
            "description": data.get("description"),
            "level": data.get("level"),
            "scale": scale_info.get("type"),
            "scale_min": scale_info.get("min"),
            "scale_max": scale_info.get("max"),
            "failure_modes": failure_modes,
            "system_template": prompts.get("system", ""),
            "user_template": prompts.get("user"),
            "template_syntax": data.get("template_syntax", "tribunal"),
            "language_guidance": data.get("language_guidance") or {},
            "required_keys": schema.get("required") or (),
            "sub_metrics": sub_metrics,
            "critical_sub_metrics": critical,
            "criteria": data.get("criteria") or (),
            "model": data.get("model"),
            "params": data.get("params") or {},
            "source": source,
            "sub_metric_thresholds": thresholds,
            "pass_threshold": scale_info.get("pass_threshold"),
            "rating_labels": {str(k): v for k, v in (scale_info.get("labels") or {}).items()},
            "needs_audio": data.get("needs_audio"),
            "audio_role": data.get("audio_role"),
        }
    )
    if data.get("slug") is None or data.get("version") is None:
        raise SpecError(f"{source}: a judge file needs slug and version")
    validate_spec(spec)
    return spec


_SYSTEM_KEYS = ("system", "system_prompt")
_USER_KEYS = ("user", "user_prompt")


def _eva_specs(data: Mapping[str, Any], source: str) -> list[JudgeSpec]:
    from scoring.eva import profile_for  # scoring.eva reads answers with scoring.parsing, which imports this module

    shared = {str(k): str(v) for k, v in (data.get("_shared") or {}).items()}
    specs: list[JudgeSpec] = []
    for name, prompts in (data.get("judge") or {}).items():
        if not isinstance(prompts, Mapping):
            raise SpecError(f"{source}: judge.{name} must map prompt keys to templates")
        system = next((str(prompts[k]) for k in _SYSTEM_KEYS if k in prompts), "")
        variants: list[tuple[str, str]] = []
        user_key = next((k for k in _USER_KEYS if k in prompts), None)
        if user_key is not None:
            variants.append((str(name), str(prompts[user_key])))
        for key, text in prompts.items():
            if key in _SYSTEM_KEYS or key in _USER_KEYS or not str(key).endswith("_prompt"):
                continue
            variants.append((f"{name}__{str(key).removesuffix('_prompt')}", str(text)))
        if not variants:
            raise SpecError(f"{source}: judge.{name} has no user prompt")
        for slug, user in variants:
            profile = profile_for(slug)
            body: dict[str, Any] = {"system": system, "user": user, "shared": shared}
            if profile is not None:
                body["profile"] = [profile.key, profile.level, profile.scale, profile.scale_min, profile.scale_max]
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
            spec = JudgeSpec(
                slug=slug,
                version=f"eva-{digest[:12]}",
                name=slug.replace("_", " "),
                description=(profile.description if profile else "EVA-style prompt")
                + f" (judge.{name} from {Path(source).name})",
                # A judge EVA's code does not describe keeps no scale: it cannot be swept until
                # one is added (a rating outside an unknown scale would otherwise pass as resolved).
                level=profile.level if profile else "conversation",
                scale=profile.scale if profile else "ordinal",
                scale_min=float(profile.scale_min) if profile else None,
                scale_max=float(profile.scale_max) if profile else None,
                failure_modes=profile.failure_modes if profile else (),
                system_template=system,
                user_template=user,
                template_syntax="format",
                source=source,
                shared_variables={k: v for k, v in shared.items() if k in _all_variables(system, user)},
                needs_audio=str(name) in EVA_AUDIO_JUDGES,
                audio_role=EVA_AUDIO_ROLES.get(str(name), ""),
                eva_profile=profile.key if profile else "",
            )
            validate_spec(spec)
            specs.append(spec)
    return specs


def _all_variables(*templates: str) -> set[str]:
    names: set[str] = set()
    for template in templates:
        names.update(template_variables(template))
    return names


def is_eva_style(data: Any) -> bool:
    return isinstance(data, Mapping) and "slug" not in data and isinstance(data.get("judge"), Mapping)


def specs_from_yaml_text(text: str, *, source: str) -> list[JudgeSpec]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from exc
    if is_eva_style(data):
        return _eva_specs(data, source)
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: expected a mapping at the top of the file")
    return [_tribunal_spec(data, source)]


def load_specs(path: str | Path) -> list[JudgeSpec]:
    """Every spec in a YAML file, or in the *.yaml / *.yml files of a directory (sorted by name)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    elif path.is_file():
        files = [path]
    else:
        raise SpecError(f"{path}: no such file or directory")
    specs: list[JudgeSpec] = []
    for file in files:
        specs.extend(specs_from_yaml_text(file.read_text(encoding="utf-8"), source=str(file)))
    return specs


# --- rendering --------------------------------------------------------------------------------


def base_language(language: str) -> str:
    return language.split("-", 1)[0].lower()


def guidance_for(spec: JudgeSpec, language: str) -> tuple[str, str]:
    """(block language, guidance text): exact match first, then the base language, else ("", "")."""
    by_lower = {k.lower(): (k, v) for k, v in spec.language_guidance.items()}
    for candidate in (language.lower(), base_language(language)):
        if candidate in by_lower:
            key, text = by_lower[candidate]
            return key, text.strip()
    return "", ""


class _Variables(dict):
    def __init__(self, values: Mapping[str, Any], *, judge: str, template: str):
        super().__init__(values)
        self.judge = judge
        self.template = template

    def __missing__(self, key: str) -> Any:
        raise MissingVariable(key, judge=self.judge, template=self.template, available=tuple(sorted(self)))


def render(spec: JudgeSpec, variables: Mapping[str, Any], *, language: str) -> RenderedPrompt:
    """Fill both templates. ``language_guidance`` holds the block for ``language`` (or "").

    The block starts with a blank line so that a template can put ``{language_guidance}`` on a
    line of its own and read well with or without it.
    """
    _key, guidance = guidance_for(spec, language)
    guidance = "\n" + guidance if guidance else ""
    values: dict[str, Any] = dict(spec.shared_variables)
    values.update(variables)
    values["language_guidance"] = guidance
    rendered = []
    for which, template in (("system", spec.system_template), ("user", spec.user_template)):
        mapping = _Variables(values, judge=spec.key, template=which)
        rendered.append(template.format_map(mapping) if template else "")
    return RenderedPrompt(system=rendered[0], user=rendered[1])
