"""The worker side: what runs after a wake-up, claimed so that it runs exactly once.

claims         claim, heartbeat, hold, requeue-or-fail, stale detection and the reaper, for any claimed row
evaluator_run  one claimed evaluation's run of the evaluator CLI (job folder, process, live results)
scoring        evaluations: fair order, claiming, running, storing scores or failures, what follows a finish
generating     generation jobs: asking a model endpoint for every page, storing the bundle, queuing its scoring
reaper         the reaper over both kinds of work (Celery beat and worker start)
"""
