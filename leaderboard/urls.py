"""URL map of the leaderboard site."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import TemplateView

from leaderboard.views import accounts, site

urlpatterns = [
    path("", TemplateView.as_view(template_name="leaderboard/home.html"), name="home"),
    path("about/", site.about, name="about"),
    path("healthz", site.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("account/", accounts.account, name="account"),
    path("account/token/", accounts.regenerate_token, name="regenerate-token"),
    path("api/v1/", include("leaderboard.api.urls")),
    path("admin/", admin.site.urls),
]
