"""`{% url %}` as Django writes it, its URLs remembered (reviewapp.remembered_urls); a template builtin
(settings.TEMPLATES), so every template's `{% url %}` is this one."""

from __future__ import annotations

from django import template
from django.template import defaulttags
from django.urls import NoReverseMatch
from django.utils.html import conditional_escape

from reviewapp.remembered_urls import remembered_reverse

register = template.Library()


class RememberedURLNode(defaulttags.URLNode):
    def render(self, context):
        args = [arg.resolve(context) for arg in self.args]
        kwargs = {k: v.resolve(context) for k, v in self.kwargs.items()}
        view_name = self.view_name.resolve(context)
        try:
            current_app = context.request.current_app
        except AttributeError:
            try:
                current_app = context.request.resolver_match.namespace
            except AttributeError:
                current_app = None
        url = ""
        try:
            url = remembered_reverse(view_name, args, kwargs, current_app)
        except NoReverseMatch:
            if self.asvar is None:
                raise
        if self.asvar:
            context[self.asvar] = url
            return ""
        if context.autoescape:
            url = conditional_escape(url)
        return url


@register.tag
def url(parser, token):
    """Django's `{% url %}`: the same syntax and errors, its URLs remembered."""
    node = defaulttags.url(parser, token)
    return RememberedURLNode(node.view_name, node.args, node.kwargs, node.asvar)
