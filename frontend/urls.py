from django.contrib.auth import views as auth_views
from django.urls import path

from frontend import views

urlpatterns = [
    path("", views.home, name="home"),
    path("rate/", views.rate_home, name="rate-home"),
    path("rate/<slug:dataset>/<slug:kind>/", views.rate_page, name="rate-page"),
    path("login/", auth_views.LoginView.as_view(template_name="frontend/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
