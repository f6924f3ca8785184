"""The shared skeleton of pages: page head, filter bar, filter select and box, results section, count line,
table, empty state, status pill, form card and form errors. A page states its heading, filters, columns and
fields; the markup lives here once. The tags are template builtins (settings.TEMPLATES): no page loads them.

Each list piece carries a `data-skeleton` marker so a test can walk every list page and find the same parts.
"""

from django import template
from django.template.loader import render_to_string
from django.urls import reverse

register = template.Library()

# A status names its pill colour in one place: failed work is an error, work in flight is a warning.
STATUS_TONES = {"failed": "error", "error": "error", "running": "warn", "pending": "warn", "queued": "warn"}


class _WrapNode(template.Node):
    """A block tag that renders its body and hands it, with resolved arguments, to an include."""

    def __init__(self, template_name: str, nodelist, args, kwargs):
        self.template_name = template_name
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
        return render_to_string(self.template_name, values | _shape(self.template_name, values))


def _shape(template_name: str, values: dict) -> dict:
    """Derived values an include needs: the filter bar's and clear link's urls, the table's header
    cells, the count's noun in the right number."""
    args = values["args"]
    if template_name == "includes/filter_bar.html":
        return {"url": _url(args[0], values.get("pk"))}
    if template_name == "includes/form_card.html":
        return {"url": _url(args[1], values.get("pk"))}
    if template_name == "includes/empty_state.html" and values.get("clear"):
        return {"clear": _url(values["clear"], values.get("pk"))}
    if template_name == "includes/table.html":
        return {"columns": [_column(spec) for spec in args]}
    if template_name == "includes/count.html":
        n, noun = args[0], args[1]
        return {"n": n, "noun": noun if n == 1 else values.get("plural") or f"{noun}s"}
    return {}


def _url(name: str, pk) -> str:
    return reverse(name, args=[pk] if pk is not None else None)


def _column(spec: str) -> dict:
    """A header given as "Label" or "Label:num" (a right-aligned number column)."""
    label, _, kind = str(spec).rpartition(":") if str(spec).endswith(":num") else (str(spec), "", "")
    return {"label": label, "numeric": kind == "num"}


def _wrap_tag(name: str, template_name: str):
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
        return _WrapNode(template_name, nodelist, args, kwargs)

    register.tag(name, compile_tag)


# {% filterbar "url_name" target="#results" [pk=obj.pk] [trigger="change, submit"] [button="Filter"] %}fields{% endfilterbar %}
_wrap_tag("filterbar", "includes/filter_bar.html")
# {% results "results-id" [live=False] [errors=form.errors] %}count, table or empty state{% endresults %}
# (with errors, the filters' errors stand in place of the body)
_wrap_tag("results", "includes/results.html")
# {% count n "noun" [plural="people"] %} suffix{% endcount %}
_wrap_tag("count", "includes/count.html")
# {% table "Judge" "Evidence:num" ... %}<tr>…</tr>{% endtable %}
_wrap_tag("table", "includes/table.html")
# {% formcard "form-id" "url_name" [pk=obj.pk] form=form [title="Add a person"] %}fields, buttons{% endformcard %}
# (a form that posts itself and swaps in its own answer, its errors in place)
_wrap_tag("formcard", "includes/form_card.html")
# {% emptystate "No x to show." filtered=cond clear="url_name" [filtered_text=… clear_text=…] %}the unfiltered hint{% endemptystate %}
_wrap_tag("emptystate", "includes/empty_state.html")


PAGEHEAD_SECTIONS = ("lede", "actions")


class _PageHeadNode(template.Node):
    """Renders each section (heading, lede, actions) and hands them to the page head include."""

    def __init__(self, sections: dict):
        self.sections = sections

    def render(self, context):
        parts = {name: nodelist.render(context) for name, nodelist in self.sections.items()}
        return render_to_string("includes/page_head.html", parts)


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


@register.inclusion_tag("includes/filter_select.html")
def filter_select(
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
    key that focuses the select."""
    chosen = {str(one) for one in (selected or () if multiple else [selected]) if one not in (None, "")}
    options = []
    for choice in choices:
        if value:
            option_value, option_text = getattr(choice, value), getattr(choice, text or value)
        elif isinstance(choice, (tuple, list)):
            option_value, option_text = choice
        else:
            option_value = option_text = choice
        options.append({"value": option_value, "label": option_text, "selected": str(option_value) in chosen})
    return {
        "name": name,
        "label": label,
        "options": options,
        "blank": blank,
        "id": id,
        "multiple": multiple,
        "hotkey": hotkey,
    }


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
