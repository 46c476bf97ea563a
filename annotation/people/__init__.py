"""People: accounts and passwords (``accounts``), token authentication
(``authentication``), roles (``roles``), sign-in lockout (``lockout``), onboarding by
bulk upload and invitation (``onboarding``) and the crowd entry through campaign links
(``crowd``)."""
