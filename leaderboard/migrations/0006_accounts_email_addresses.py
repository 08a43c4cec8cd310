"""Accounts move to django-allauth: every existing user with an e-mail address gets allauth's
address row, and failures caused by the submitted pages get their own (charged) kind.

Which migrated addresses count as verified (docs/accounts.md): an address used by exactly one
account (compared case-insensitively) is migrated *verified*, so existing researchers keep
submitting, and their API tokens keep working, without a new step; an address shared by several
accounts is migrated *unverified* on each of them (at most one can verify it later: addresses are
unique); an account without an address gets none and must add and verify one before submitting.
"""

from collections import Counter

from django.conf import settings
from django.db import migrations, models


def addresses_for_existing_users(apps, schema_editor):
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    EmailAddress = apps.get_model("account", "EmailAddress")
    users = [(pk, email.strip()) for pk, email in User.objects.exclude(email="").values_list("pk", "email")
             if email and email.strip()]
    uses = Counter(email.lower() for _, email in users)
    have = set(EmailAddress.objects.values_list("user_id", flat=True))
    EmailAddress.objects.bulk_create([
        EmailAddress(user_id=pk, email=email.lower(), primary=True, verified=uses[email.lower()] == 1)
        for pk, email in users if pk not in have
    ])


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0005_board_generation"),
        ("account", "0009_emailaddress_unique_primary_email"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="evaluation",
            name="failure_kind",
            field=models.CharField(blank=True, choices=[
                ("", "-"), ("bundle", "the bundle could not be used"), ("generation", "page generation failed"),
                ("time_limit", "time limit exceeded"), ("evaluator", "evaluator fault"),
                ("infrastructure", "infrastructure failure"), ("page", "the pages made the evaluator fail")],
                default="", max_length=16),
        ),
        migrations.RunPython(addresses_for_existing_users, migrations.RunPython.noop),
    ]
