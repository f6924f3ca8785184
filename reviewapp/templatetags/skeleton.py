"""The shared skeleton of pages: page head, filter bar, filter select and box, results section, count line,
table, empty state, status pill, form card and form errors. A page states its heading, filters, columns and
fields; the markup lives here once. The tags are template builtins (settings.TEMPLATES): no page loads them.

Each list piece carries a `data-skeleton` marker so a test can walk every list page and find the same parts.

The pieces on every list page (the page head, the filter bar and its selects) write their markup here in
Python; the rest render an include under templates/includes/. An include costs more to render than the
few lines of markup it holds, and these are on every request of the queue and of every list page.
tests/reviewapp/site/test_skeleton_tags.py keeps the includes they replaced and compares the two.
"""

from django import template
from django.template.base import render_value_in_context
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from reviewapp.remembered_urls import remembered_reverse

register = template.Library()

# A status names its pill colour in one place: failed work is an error, work in flight is a warning.
STATUS_TONES = {"failed": "error", "error": "error", "running": "warn", "pending": "warn", "queued": "warn"}


class _WrapNode(template.Node):
    """A block tag that renders its body and hands it, with resolved arguments, to what writes the
    piece (`write`: an include rendered, or markup written in Python)."""

    def __init__(self, name: str, write, nodelist, args, kwargs):
        self.name = name
        self.write = write
        self.nodelist = nodelist
        self.args = args
        self.kwargs = kwargs

    def render(self, context):
        values = {key: value.resolve(context) for key, value in self.kwargs.items()}
        values["args"] = [value.resolve(context) for value in self.args]
        # A results section whose filters failed shows their errors instead: its body is not rendered at
        # all, so it neither runs its queries nor meets the values the invalid filters left.
        values["body"] = "" if values.get("errors") else self.nodelist.render(context)
        values["csrf_token"] = context.get("csrf_token")
        return self.write(values | _shape(self.name, values))


# What the included templates' `{{ value }}` escapes with: render_to_string's own context (escaping on).
_INCLUDED = template.Context()


def _shown(value) -> str:
    """`{{ value }}` in an included template: localized, then escaped unless already safe."""
    return render_value_in_context(value, _INCLUDED)


def _filter_bar(values: dict) -> SafeString:
    """The filter bar's form, as templates/includes/filter_bar.html wrote it before it was written here:
    every list page has one, and rendering an include costs more than the bar's markup. Each value is
    shown as `{{ value }}` shows it (`_shown`); tests/reviewapp/site/test_skeleton_tags.py compares the
    two."""
    url, target = _shown(values["url"]), _shown(values.get("target", ""))
    indicator = f' hx-indicator="{target}"' if values.get("indicator") else ""
    # Why mark_safe is right here: the markup is fixed and every value in it went through _shown.
    return mark_safe(  # noqa: S308  # every value escaped by _shown
        f'<form class="filters" method="get" action="{url}" role="search" data-skeleton="filter-bar"\n'
        f'      hx-get="{url}" hx-target="{target}" hx-swap="outerHTML"\n'
        f'      hx-trigger="{_shown(values.get("trigger") or "change, submit")}" hx-push-url="true"{indicator}>\n'
        f"  {_shown(values['body'])}\n"
        f'  <button type="submit" class="button">{_shown(values.get("button") or "Filter")}</button>\n'
        "</form>\n"
    )


def _shape(name: str, values: dict) -> dict:
    """Derived values an include needs: the filter bar's and clear link's urls, the table's header
    cells, the count's noun in the right number."""
    args = values["args"]
    if name == "filterbar":
        return {"url": _url(args[0], values.get("pk"))}
    if name == "formcard":
        return {"url": _url(args[1], values.get("pk"))}
    if name == "emptystate" and values.get("clear"):
        return {"clear": _url(values["clear"], values.get("pk"))}
    if name == "table":
        return {"columns": [_column(spec) for spec in args]}
    if name == "count":
        n, noun = args[0], args[1]
        return {"n": n, "noun": noun if n == 1 else values.get("plural") or f"{noun}s"}
    return {}


def _url(name: str, pk) -> str:
    return remembered_reverse(name, [pk] if pk is not None else ())


def _column(spec: str) -> dict:
    """A header given as "Label" or "Label:num" (a right-aligned number column)."""
    label, _, kind = str(spec).rpartition(":") if str(spec).endswith(":num") else (str(spec), "", "")
    return {"label": label, "numeric": kind == "num"}


def _included(template_name: str):
    """The writer of a piece that renders its include."""
    return lambda values: render_to_string(template_name, values)


def _wrap_tag(name: str, write):
    def compile_tag(parser, token):
        bits = token.split_contents()[1:]
        args, kwargs = [], {}
        for bit in bits:
            key, sep, value = bit.partition("=")
            if sep:
                kwargs[key] = parser.compile_filter(value)
            else:
                args.append(parser.compile_filter(bit))
        nodelist = parser.parse((f"end{name}",))
        parser.delete_first_token()
        return _WrapNode(name, write, nodelist, args, kwargs)

    register.tag(name, compile_tag)


# {% filterbar "url_name" target="#results" [pk=obj.pk] [trigger="change, submit"] [button="Filter"] %}fields{% endfilterbar %}
_wrap_tag("filterbar", _filter_bar)
# {% results "results-id" [live=False] [errors=form.errors] %}count, table or empty state{% endresults %}
# (with errors, the filters' errors stand in place of the body)
_wrap_tag("results", _included("includes/results.html"))
# {% count n "noun" [plural="people"] %} suffix{% endcount %}
_wrap_tag("count", _included("includes/count.html"))
# {% table "Judge" "Evidence:num" ... %}<tr>…</tr>{% endtable %}
_wrap_tag("table", _included("includes/table.html"))
# {% formcard "form-id" "url_name" [pk=obj.pk] form=form [title="Add a person"] %}fields, buttons{% endformcard %}
# (a form that posts itself and swaps in its own answer, its errors in place)
_wrap_tag("formcard", _included("includes/form_card.html"))
# {% emptystate "No x to show." filtered=cond clear="url_name" [filtered_text=… clear_text=…] %}the unfiltered hint{% endemptystate %}
_wrap_tag("emptystate", _included("includes/empty_state.html"))


PAGEHEAD_SECTIONS = ("lede", "actions")


class _PageHeadNode(template.Node):
    """Renders each section (heading, lede, actions) and hands them to the page head include."""

    def __init__(self, sections: dict):
        self.sections = sections

    def render(self, context):
        parts = {name: nodelist.render(context) for name, nodelist in self.sections.items()}
        # The markup templates/includes/page_head.html gave (test_skeleton_tags compares the two); each
        # section is its rendered nodelist, already escaped (safe), shown as `{{ section }}` shows it.
        lede = parts.get("lede", "")
        lede = f'<p class="muted">{_shown(lede)}</p>' if lede else ""
        return mark_safe(  # noqa: S308  # every part escaped by _shown
            f'<div class="pagehead">\n  <div>\n    <h1>{_shown(parts["heading"])}</h1>\n    {lede}\n  </div>\n'
            f"  {_shown(parts.get('actions', ''))}\n</div>\n"
        )


@register.tag
def pagehead(parser, token):
    """{% pagehead %}heading [{% lede %}the muted line] [{% actions %}buttons or links]{% endpagehead %}

    The head every page opens with: its h1, the muted line under it, and the actions on the right."""
    sections, name = {}, "heading"
    while name != "endpagehead":
        sections[name] = parser.parse((*PAGEHEAD_SECTIONS, "endpagehead"))
        name = parser.next_token().contents
        if name in sections:
            raise template.TemplateSyntaxError(f"pagehead has one {{% {name} %}} at the most")
    return _PageHeadNode(sections)


@register.simple_tag(takes_context=True)
def filter_select(
    context,
    name: str,
    label: str,
    choices,
    selected,
    *,
    id: str,
    blank: str = "",
    value: str = "",
    text: str = "",
    multiple: bool = False,
    hotkey: str = "",
):
    """A labelled select of a filter. Choices are plain values, (value, label) pairs, or objects whose
    `value` and `text` attributes give each option (`value="slug" text="name"`). `blank` is the text of
    the empty option (none without it); with `multiple`, `selected` is a list of values; `hotkey` is the
    key that focuses the select.

    Written here rather than by an included template: every list page has a bar of these, a page's
    options number in the dozens, and the template engine's lookups for each cost more than the rest of
    the bar. Each value goes through `render_value_in_context`, as `{{ value }}` in a template does
    (localized, then escaped unless already safe); tests/reviewapp/site/test_skeleton_tags.py compares
    the markup with the template this replaced."""
    chosen = {str(one) for one in (selected or () if multiple else [selected]) if one not in (None, "")}
    options = []
    for choice in choices:
        if value:
            option_value, option_text = getattr(choice, value), getattr(choice, text or value)
        elif isinstance(choice, (tuple, list)):
            option_value, option_text = choice
        else:
            option_value = option_text = choice
        options.append(
            f'<option value="{render_value_in_context(option_value, context)}"'
            f"{' selected' if str(option_value) in chosen else ''}>{render_value_in_context(option_text, context)}</option>"
        )
    shown_id = render_value_in_context(id, context)
    several = ' multiple size="3"' if multiple else ""
    if hotkey:
        key = render_value_in_context(hotkey, context)
        several += f' data-hotkey="{key}" aria-keyshortcuts="{key}"'
    empty = f'<option value="">{render_value_in_context(blank, context)}</option>' if blank else ""
    # Why mark_safe is right here: the markup is fixed, and every value in it went through
    # render_value_in_context, the template engine's own escaping of `{{ value }}`.
    return mark_safe(  # noqa: S308  # every value escaped above
        '<div class="field field--inline">\n'
        f'  <label for="{shown_id}">{render_value_in_context(label, context)}</label>\n'
        f'  <select id="{shown_id}" name="{render_value_in_context(name, context)}"{several}>\n'
        f"    {empty}\n"
        f"    {''.join(options)}\n"
        "  </select>\n"
        "</div>\n"
    )


@register.inclusion_tag("includes/filter_input.html")
def filter_input(
    name: str, label: str, value, *, id: str, type: str = "text", placeholder: str = "", size=None, hotkey: str = ""
):
    """A labelled text, search, number or date box of a filter; a number box counts from 1."""
    return {
        "name": name,
        "label": label,
        "value": "" if value is None else value,
        "id": id,
        "type": type,
        "placeholder": placeholder,
        "size": size,
        "hotkey": hotkey,
    }


@register.inclusion_tag("includes/form_errors.html")
def form_errors(form):
    """The errors of a form that belong to no one field, as one alert."""
    return {"errors": form.non_field_errors() if form else ()}


@register.inclusion_tag("includes/status_pill.html")
def status_pill(status: str, label: str = ""):
    """A status as a pill whose tone says failed (error) or in flight (warn)."""
    return {"status": status, "label": label or status, "tone": STATUS_TONES.get(str(status), "")}
