"""Acting on a page without a language model: find the element an action describes, carry it out.

- ``targeting.find_target(page, action, params) -> Target`` (collection in ``candidates.js``,
  description reading in ``description``, feature scores in ``scoring``, relative position
  cues such as "to the left of the input" in ``relations``);
- ``actions.perform(page, action, target, params) -> (executed, reason)``;
- ``targeting.LISTENER_TRACKER_JS``: init script that marks elements with click listeners;
- ``params.TargetingParams`` / ``params.AssertionParams``: the protocol's "targeting" and
  "assertion" sections as typed values.
"""
