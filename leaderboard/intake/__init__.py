"""Intake: what a person (or a maintainer) asks for, checked and stored, and the wake-ups it sends.

bundles      the Submit form and accepting a bundle upload (quota, intake rules, one transaction);
             the dry-run check of a bundle (no quota, nothing stored)
endpoints    the Submit-a-model form and accepting an endpoint config (key stored encrypted)
entries      owners changing an entry's details or visibility, or withdrawing it (logged)
evaluations  queuing an evaluation, cancelling, rescoring, evaluations born ended
status       what the progress endpoint, the API and the results download show of a submission
baselines    queuing the evaluator's own baseline rows
dispatch     the only code that sends Celery messages (by task name: it never imports the tasks)
"""
