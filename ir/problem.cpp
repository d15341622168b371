// Placeholder until the foundation lands (see issue #2): make_problem lives here.
