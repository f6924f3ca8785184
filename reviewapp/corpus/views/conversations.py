from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from reviewapp import access
from reviewapp.corpus.selectors import corpus
from reviewapp.models import Conversation, Turn
from reviewapp.rendering import render_page


def conversation_or_404(request, conversation_id: int) -> Conversation:
    try:
        conversation = corpus.conversation_with_dataset(conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation.") from None
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
    try:
        turn = corpus.turn_detail(
            conversation=conversation, turn_id=turn_id, blindfold=access.blindfold(request.user, conversation)
        )
    except Turn.DoesNotExist:
        raise Http404("No such turn in this conversation.") from None
    if not request.htmx:
        return redirect(reverse("conversation_detail", args=[conversation.pk]) + f"#turn-{turn.pk}")
    return render_page(request, "conversations/detail.html", "turn", {"conversation": conversation, "turn": turn})
