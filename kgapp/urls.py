from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import path
from django.views.generic import RedirectView

from kgapp.web import views
from kgapp.web.api import api

urlpatterns = [
    path("", views.home, name="home"),
    # Pages name the SVG icon; the admin's and browsers' default request lands here.
    path("favicon.ico", RedirectView.as_view(url=static("app/img/favicon.svg"), permanent=True)),
    path(
        "invitations/<int:invitation_id>/<str:answer>",
        views.invitation_answer,
        name="invitation-answer",
    ),
    path("t/<str:slug>/", views.tenant_home, name="tenant-home"),
    path("t/<str:slug>/explore", views.explore, name="explore"),
    path("t/<str:slug>/uploads", views.uploads, name="uploads"),
    path("t/<str:slug>/ask", views.ask, name="ask"),
    path("t/<str:slug>/retention", views.retention, name="retention"),
    path("accounts/login/", views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
