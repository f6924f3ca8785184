"""What a judge, a signature, a reviewer, a lead or a gold label says of a target, in one shape."""

from django.db import models


class LabelValue(models.Model):
    """A value on the judge's scale: a rating (numeric scales), a label (categorical) or pass/fail
    (binary). The judge's scale says which one carries the value; the others stay empty."""

    rating = models.FloatField(null=True, blank=True)
    label = models.CharField(max_length=100, blank=True)
    passed = models.BooleanField(null=True, blank=True)

    class Meta:
        abstract = True
