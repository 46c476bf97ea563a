"""Crowd-platform entry: campaign links for Prolific and platforms alike.

Opening ``/join/<token>/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..`` makes (or resumes)
the participant of that link and external id: one (link, external id) is one account
however often, in however many tabs, the link is opened (a lock on the platform id and
the unique (link, external id) row decide races). Each link makes its own accounts
(``<platform>-<link id>-<external id>``): a platform id is no key to a run of another
link, and the link only ever signs in an account it made: participant group only, no
usable password (``_crowd_user``); a name that belongs to any other account refuses the
join. A platform id takes part in one link per dataset: a second link of the same
dataset refuses it, so one person never rates a dataset through two accounts or earns
two codes for one piece of work. A participant rates up to the link's quota of items,
then is shown the completion code; one whose pairs run out first sees how many they
rated and, if earned, the link's partial code (``completion_outcome``). The rating policy
(``annotation.rating.policy``) refuses a claim or a submit past the quota or the end page
(QuotaReached, counted by ``annotation.people.crowd.quota``), so neither a second tab nor a
script gets more items than the quota.

Modules: ``links`` (check and create a link, its study URL and numbers), ``join`` (a
participant's first and later visits), ``completion`` (the next step, the end of a run
and its code), ``study`` (the consent step and the policy's gate of the steps
before rating), ``questions`` (the link's questions before and after rating, and the
participants' answers) and ``quota`` (a participant's items done against the link's quota)."""
