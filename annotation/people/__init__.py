"""People: accounts and passwords (``accounts``), token authentication
(``authentication``), sign-in lockout (``lockout``), onboarding by bulk upload and invitation
(``onboarding``, ``invitation_csv``), reads (``selectors``) and the crowd entry through
campaign links, with the participant's quota (``crowd``).

Imports: ``annotation.quality`` (the quiz a participant owes), ``annotation.serving`` and
below; never the rating policy.
"""
