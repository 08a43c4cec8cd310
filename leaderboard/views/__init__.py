"""Views, one module per site area. Views stay thin: rules live in plain modules."""
