from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from reviewapp import access
from reviewapp.corpus.selectors import corpus
from reviewapp.models import Conversation
from reviewapp.rendering import found_or_404, render_page


def conversation_or_404(request, conversation_id: int) -> Conversation:
    conversation = found_or_404(
        corpus.conversation_with_dataset, "No such conversation.", conversation_id=conversation_id
    )
    return access.conversation_for_user(request.user, conversation)


@require_GET
@login_required
def conversation_detail(request, conversation_id: int):
    conversation = conversation_or_404(request, conversation_id)
    blindfold = access.blindfold(request.user, conversation)
    conversation = corpus.conversation_detail(conversation=conversation, blindfold=blindfold)
    return render_page(
        request, "conversations/detail.html", "", {"conversation": conversation, "blind": blindfold.hides_any}
    )


@require_GET
@login_required
def conversation_turn(request, conversation_id: int, turn_id: int):
    """One turn as an htmx fragment; a plain request is sent to the turn's place in its conversation."""
    conversation = conversation_or_404(request, conversation_id)
    blindfold = access.blindfold(request.user, conversation)
    missing = "No such turn in this conversation."
    turn = found_or_404(corpus.turn_detail, missing, conversation=conversation, turn_id=turn_id, blindfold=blindfold)
    if not request.htmx:
        return redirect(reverse("conversation_detail", args=[conversation.pk]) + f"#turn-{turn.pk}")
    return render_page(request, "conversations/detail.html", "turn", {"conversation": conversation, "turn": turn})
