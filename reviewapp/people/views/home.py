from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect

from reviewapp import access


@login_required
def home(request):
    """Where a login lands: reviewers on their queue, leads and admins on the datasets."""
    return redirect("dataset_list" if access.is_lead(request.user) else "queue_index")
