"""Values every page template can use."""

import evaluator


def site(request):
    return {"evaluator_version": evaluator.__version__}
