from django.contrib.auth import views as auth_views
from django.urls import path

import config.converters  # noqa: F401  (registers <id:...>, the bounded database id)
from frontend import campaign, campaign_actions, crowd, crowd_study, rater_pages, research, views

urlpatterns = [
    path("", views.home, name="home"),
    path("rate/", views.rate_home, name="rate-home"),
    path("rate/me/", rater_pages.rater_own_page, name="rater-own"),
    path("rate/<slug:dataset>/paused/", views.rate_paused, name="rate-paused"),
    path("rate/<slug:dataset>/<slug:kind>/", views.rate_page, name="rate-page"),
    path("research/", research.research, name="research"),
    path("campaigns/", campaign.campaign_index, name="campaign-index"),
    path("campaigns/<slug:dataset>/", campaign.campaign_dashboard, name="campaign-dashboard"),
    path("campaigns/<slug:dataset>/raters/", campaign.campaign_raters, name="campaign-raters"),
    path("campaigns/<slug:dataset>/raters/<id:rater_id>/", campaign.campaign_rater, name="campaign-rater"),
    path("campaigns/<slug:dataset>/refresh/", campaign.campaign_refresh, name="campaign-refresh"),
    path(
        "campaigns/<slug:dataset>/raters/<id:rater_id>/pause/",
        campaign_actions.rater_pause_view,
        name="campaign-rater-pause",
    ),
    path(
        "campaigns/<slug:dataset>/raters/<id:rater_id>/lift-pause/",
        campaign_actions.rater_pause_lift_view,
        name="campaign-rater-lift",
    ),
    path(
        "campaigns/<slug:dataset>/raters/<id:rater_id>/exclude/",
        campaign_actions.rater_exclude_view,
        name="campaign-rater-exclude",
    ),
    path(
        "campaigns/<slug:dataset>/exclusions/<id:exclusion_id>/",
        campaign_actions.exclusion_view,
        name="campaign-exclusion",
    ),
    path(
        "campaigns/<slug:dataset>/exclusions/<id:exclusion_id>/undo/",
        campaign_actions.exclusion_undo_view,
        name="campaign-exclusion-undo",
    ),
    path("invite/<str:token>/", views.invitation, name="invitation"),
    path("join/<str:token>/", crowd.join, name="join"),
    path("join/<str:token>/next/", crowd.join_next, name="join-next"),
    path("join/<str:token>/done/", crowd.join_done, name="join-done"),
    path("join/<str:token>/consent/", crowd_study.join_consent, name="join-consent"),
    path("join/<str:token>/questions/<slug:phase>/", crowd_study.join_questions, name="join-questions"),
    path("join/<str:token>/leave/", crowd_study.join_leave, name="join-leave"),
    path("login/", auth_views.LoginView.as_view(template_name="frontend/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
