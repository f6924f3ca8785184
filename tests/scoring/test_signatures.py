import pytest

from scoring.signatures import SignatureError, SignatureRule, evaluate, find_match, validate_rule


def rule(**overrides) -> SignatureRule:
    values = {
        "id": 1,
        "judge": "task_completion",
        "language": "en",
        "criterion": "",
        "intent": "decline",
        "kind": "stem",
        "pattern": "no",
        "negation_guards": ("would not say no", "not say no to"),
        "label": "refusal",
        "rating": None,
        "passed": False,
    }
    values.update(overrides)
    return SignatureRule(**values)


def test_negation_guard_cancels_a_decline_in_the_same_sentence():
    decline = rule()
    assert evaluate([decline], "I would not say no to that.", "en") is None
    match = evaluate([decline], "No, I can't do that.", "en")
    assert match is not None
    assert match.rule is decline
    assert match.matched_text == "no"


def test_guard_only_covers_its_own_sentence():
    decline = rule()
    text = "I would not say no to a window seat. No, I can't change that booking."
    assert evaluate([decline], text, "en") is not None


def test_decline_without_guards_is_refused():
    for intent in ("decline", "Refusal"):
        with pytest.raises(SignatureError, match="negation guards"):
            validate_rule(rule(intent=intent, negation_guards=()))
    validate_rule(rule(intent="gloss", negation_guards=()))


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"kind": "regex", "pattern": "(unclosed"}, "does not compile"),
        ({"kind": "regex", "pattern": "a*"}, "empty string"),
        ({"kind": "glob"}, "kind must be one of"),
        ({"pattern": "  "}, "pattern is empty"),
        ({"label": "", "passed": None, "rating": None}, "must give"),
        ({"negation_guards": ("ok", " ")}, "guard is empty"),
    ],
)
def test_invalid_rules_are_refused(overrides, problem):
    with pytest.raises(SignatureError, match=problem):
        validate_rule(rule(**overrides))


def test_stem_matches_word_prefixes_at_word_boundaries_only():
    refuse = rule(pattern="refus", negation_guards=("not refus",))
    assert find_match(refuse, "We refused the change.", "en") is not None
    assert find_match(refuse, "Ce vol est refusé.", "fr") is not None
    assert find_match(refuse, "It is unrefusable.", "en") is None


def test_stem_is_unicode_aware_and_multiword():
    gloss = rule(language="fr", intent="gloss", pattern="courriel (e-mail", kind="substring", negation_guards=())
    assert evaluate([gloss], "Je l'envoie par COURRIEL (e-mail).", "fr-CA") is not None
    words = rule(language="fr", pattern="ne peux pas", negation_guards=("ne peux pas vous dire non",))
    assert evaluate([words], "Je ne   peux pas modifier ce billet.", "fr") is not None
    assert evaluate([words], "Je ne peux pas vous dire non.", "fr") is None
    accented = rule(language="fr", intent="delay", pattern="retard", negation_guards=())
    assert evaluate([accented], "Votre vol est retardé.", "fr") is not None
    assert evaluate([accented], "Il n'y a pas d'éretard ici.", "fr") is None


def test_languages_without_spaces_fall_back_to_substring():
    ja = rule(language="ja", pattern="できません", negation_guards=("できませんか",))
    assert evaluate([ja], "申し訳ございませんが、変更はできません。", "ja") is not None
    assert evaluate([ja], "変更できませんか。", "ja") is None


def test_curly_apostrophes_match_straight_ones():
    cant = rule(pattern="can't", negation_guards=("can't say no",))
    assert evaluate([cant], "Sorry, I can\u2019t do that.", "en") is not None


def test_no_match_is_unresolved():
    assert evaluate([rule()], "Sure, I'll book it.", "en") is None


def test_contradicting_matches_are_unresolved():
    refusal = rule()
    accept = rule(id=2, intent="accept", pattern="happy to", negation_guards=(), label="accepted", passed=True)
    assert evaluate([refusal, accept], "No problem, happy to help.", "en") is None
    assert evaluate([refusal, accept], "Happy to help.", "en").rule is accept


def test_agreeing_matches_resolve():
    refusal = rule()
    other = rule(id=2, pattern="cannot", negation_guards=("cannot say no",))
    match = evaluate([refusal, other], "No. I cannot do that.", "en")
    assert match is not None
    assert match.rule.outcome == ("refusal", None, False)


def test_rules_apply_to_their_language_and_its_variants_only():
    french = rule(language="fr", pattern="non", negation_guards=("pas dire non",))
    quebec = rule(language="fr-CA", pattern="non", negation_guards=("pas dire non",))
    assert evaluate([french], "Non, désolé.", "fr-CA") is not None
    assert evaluate([quebec], "Non, désolé.", "fr") is None
    assert evaluate([french], "Non, désolé.", "en") is None


def test_regex_kind():
    code = rule(intent="spelled_code", kind="regex", pattern=r"\b[A-Z]\d[A-Z]\b", negation_guards=(), label="code")
    assert evaluate([code], "Your code is k7m.", "en") is not None
    assert evaluate([code], "Your code is ready.", "en") is None
