"""Who may see or do what: every rule lives here, one helper per object, each raising PermissionDenied.

Views and selectors ask this module; templates receive the booleans it answers and never decide.

Languages are BCP 47 codes. A reviewer assigned "fr" covers "fr" and its regional variants
("fr-CA"); one assigned "fr-CA" covers only "fr-CA". Leads and admins see every language.

Blind review: until a reviewer has labelled an item, nothing shows them that item's target (its turn,
or its conversation for a conversation-level item) with verdicts, explanations, gold, or other
people's labels and comments. A target is blind in a dataset with `blind_review` on, and on any
target of a QA-sample item that needs two or more reviews (the second reviewer never sees the first's
label), until that item is closed. Leads and admins are never blind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q
from django.db.models.lookups import IsNull
from django.utils.http import url_has_allowed_host_and_scheme

from reviewapp.models import Comment, Conversation, Dataset, Profile, Review, ReviewItem, Role, Turn

QA_SAMPLE = ReviewItem.Reason.QA_SAMPLE
# The QA sample's second (and later) reviewers label before they see anyone else's label.
QA_BLIND_FROM_K = 2


# --- who the user is ----------------------------------------------------------------------------


def profile_of(user) -> Profile | None:
    if not user.is_authenticated:
        return None
    try:
        return user.profile
    except Profile.DoesNotExist:
        return None


def sees_all_languages(user) -> bool:
    if user.is_superuser:
        return True
    profile = profile_of(user)
    return bool(profile and profile.sees_all_languages)


def is_lead(user) -> bool:
    """Leads and admins (and superusers): they decide gold and see everyone's work."""
    profile = profile_of(user)
    return user.is_superuser or bool(profile and profile.role in (Role.LEAD, Role.ADMIN))


def is_admin(user) -> bool:
    profile = profile_of(user)
    return user.is_superuser or bool(profile and profile.role == Role.ADMIN)


def check_lead(user, message: str = "Only leads and admins open this page.") -> None:
    if not is_lead(user):
        raise PermissionDenied(message)


def check_admin(user, message: str = "Only admins manage people.") -> None:
    if not is_admin(user):
        raise PermissionDenied(message)


def assigned_languages(user) -> list[str]:
    profile = profile_of(user)
    return list(profile.languages) if profile else []


def role_display(user) -> str:
    profile = profile_of(user)
    if profile:
        return profile.get_role_display()
    return "Superuser" if user.is_superuser else "No role"


# --- languages ----------------------------------------------------------------------------------


def profile_covers(profile: Profile, language: str) -> bool:
    """Whether a person (by their profile) may review `language`."""
    if profile.sees_all_languages or profile.user.is_superuser:
        return True
    return _covers(profile.languages, language)


def language_allowed(user, language: str) -> bool:
    if sees_all_languages(user):
        return True
    return _covers(assigned_languages(user), language)


def _covers(assigned_codes, language: str) -> bool:
    language = language.lower()
    for assigned in assigned_codes:
        assigned = assigned.lower()
        if language == assigned or language.startswith(assigned + "-"):
            return True
    return False


def language_match_q(language: str, field: str = "language") -> Q:
    """`field` is `language` or one of its regional variants: "fr" matches "fr" and "fr-CA"."""
    return Q(**{f"{field}__iexact": language}) | Q(**{f"{field}__istartswith": language + "-"})


def language_q(user, field: str = "language") -> Q:
    """A filter on `field` (a BCP 47 language column) limited to what `user` may see."""
    if sees_all_languages(user):
        return Q()
    q = Q(pk__in=[])
    for assigned in assigned_languages(user):
        q |= language_match_q(assigned, field)
    return q


# --- objects ------------------------------------------------------------------------------------


def conversation_for_user(user, conversation: Conversation) -> Conversation:
    if not language_allowed(user, conversation.language):
        raise PermissionDenied("This conversation's language is not assigned to you.")
    return conversation


def dataset_visible_q(user, field: str = "") -> Q:
    """Datasets (at `field`, a path to a Dataset) with at least one conversation `user` may see."""
    if sees_all_languages(user):
        return Q()
    prefix = f"{field}__" if field else ""
    visible = Conversation.objects.filter(language_q(user), dataset=OuterRef(f"{prefix}pk" if field else "pk"))
    return Q(Exists(visible))


def dataset_for_user(user, dataset: Dataset) -> Dataset:
    if sees_all_languages(user):
        return dataset
    if not dataset.conversations.filter(language_q(user)).exists():
        raise PermissionDenied("This dataset has no conversation in your languages.")
    return dataset


# The names these helpers had before the access layer was one module, for code written against them.
check_conversation = conversation_for_user
check_dataset = dataset_for_user


def dataset_for_lead(user, dataset: Dataset) -> Dataset:
    check_lead(user, "Only leads and admins change a dataset's review settings.")
    return dataset


def item_for_reviewer(user, item: ReviewItem) -> ReviewItem:
    """The one access helper for review items: the item's language must be assigned to `user`."""
    if not language_allowed(user, item.language):
        raise PermissionDenied("This item's language is not assigned to you.")
    return item


def turn_for_user(user, turn: Turn) -> Turn:
    conversation_for_user(user, turn.conversation)
    return turn


def comment_for_user(user, comment: Comment) -> Comment:
    """A comment one may act on (flag): its turn must be visible, and in blind review the comment too."""
    conversation_for_user(user, comment.turn.conversation)
    if comment.author_id != user.pk and not blindfold(user, comment.turn.conversation).shows(comment.turn_id):
        raise PermissionDenied("This comment is hidden until you have labelled its turn.")
    return comment


# --- blind review -------------------------------------------------------------------------------


def item_is_blind(item: ReviewItem, dataset: Dataset | None = None) -> bool:
    """Blind: the dataset asks for it, or a QA-sample item needs two or more reviews."""
    dataset = dataset or item.dataset
    return bool(dataset.blind_review) or (
        QA_SAMPLE in (item.reasons or []) and item.reviews_required >= QA_BLIND_FROM_K
    )


def _qa_blind_q() -> Q:
    return (
        Q(reasons__icontains=f'"{QA_SAMPLE}"')
        & Q(reviews_required__gte=QA_BLIND_FROM_K)
        & ~Q(status=ReviewItem.Status.CLOSED)
    )


@dataclass(frozen=True)
class Blindfold:
    """Which targets of one conversation `user` may not see judged yet. Targets are turn ids, and None
    for the conversation itself. `everything` hides every target not in `revealed`."""

    everything: bool = False
    hidden: frozenset = field(default_factory=frozenset)
    revealed: frozenset = field(default_factory=frozenset)

    def shows(self, target: int | None) -> bool:
        if target in self.revealed:
            return True
        return not (self.everything or target in self.hidden)

    @property
    def hides_any(self) -> bool:
        return self.everything or bool(self.hidden)


OPEN_EYES = Blindfold()


def blindfold(user, conversation: Conversation) -> Blindfold:
    """What stays hidden from `user` in `conversation` (two small queries for a reviewer, none for a lead)."""
    if is_lead(user):
        return OPEN_EYES
    revealed = frozenset(
        Review.objects.filter(reviewer=user, item__conversation=conversation).values_list("item__turn_id", flat=True)
    )
    if conversation.dataset.blind_review:
        return Blindfold(everything=True, revealed=revealed)
    hidden = frozenset(
        ReviewItem.objects.filter(_qa_blind_q(), conversation=conversation).values_list("turn_id", flat=True)
    )
    return Blindfold(hidden=hidden - revealed, revealed=revealed) if hidden - revealed else OPEN_EYES


def target_labelled(user) -> Exists:
    """Whether `user` has labelled the target (turn or conversation) of the review item of the outer
    query: `can_see_judgements`' question, asked inside the query that reads the item."""
    same_target = Q(item__turn_id=OuterRef("turn_id")) | Q(IsNull(OuterRef("turn_id"), True), item__turn__isnull=True)
    return Exists(Review.objects.filter(same_target, reviewer=user, item__conversation_id=OuterRef("conversation_id")))


def can_see_judgements(user, target: ReviewItem | Turn | Conversation) -> bool:
    """May `user` see the verdicts, gold and other people's labels and comments of `target`?"""
    if is_lead(user):
        return True
    if isinstance(target, ReviewItem):
        labelled = getattr(target, "labelled_by", {}).get(user.pk)  # when read with the item: target_labelled
        if labelled is None:
            labelled = Review.objects.filter(
                item__conversation_id=target.conversation_id, item__turn_id=target.turn_id, reviewer=user
            ).exists()
        return labelled or not item_is_blind(target)
    if isinstance(target, Turn):
        return blindfold(user, target.conversation).shows(target.pk)
    return blindfold(user, target).shows(None)


def comments_visible_to(user, prefix: str = "") -> Q:
    """Comments `user` may read (at `prefix`, a path to a Comment): their languages, and in blind
    review only their own on a target they have not labelled yet. `turn_comments_open` is the same rule
    for one turn whose facts are already read (the review screen): change the two together."""
    p = f"{prefix}__" if prefix else ""
    q = language_q(user, f"{p}turn__conversation__language")
    if is_lead(user):
        return q
    labelled = Review.objects.filter(reviewer=user, item__turn_id=OuterRef(f"{p}turn_id"))
    blind_dataset = Q(**{f"{p}turn__conversation__dataset__blind_review": True})
    qa_blind = ReviewItem.objects.filter(_qa_blind_q(), turn_id=OuterRef(f"{p}turn_id"))
    mine = Q(**{f"{p}author": user}) if user.is_authenticated else Q(pk__in=[])
    return q & (mine | Exists(labelled) | (~blind_dataset & ~Exists(qa_blind)))


def turn_comments_open(user, *, language: str, labelled: bool, blind: bool) -> str:
    """`comments_visible_to` for one turn whose facts are already read: "all" of its comments, only
    `user`'s "own" (blind review of a target they have not labelled), or "none" (not their language).
    `blind`: the turn's dataset is blind, or a QA-sample item keeps the turn blind (`_qa_blind_q`)."""
    if not language_allowed(user, language):
        return "none"
    return "all" if is_lead(user) or labelled or not blind else "own"


# --- doors --------------------------------------------------------------------------------------


def safe_next(request, fallback: str) -> str:
    """The `next` path of a request when it stays on this site (a path, never another host or scheme)."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback
