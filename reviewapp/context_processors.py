from django.conf import settings


def tribunal(request):
    return {"llm_tier_enabled": settings.LLM_TIER_ENABLED}
