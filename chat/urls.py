from __future__ import annotations

from django.urls import path

from chat import views

app_name = "chat"

urlpatterns = [
    path("", views.index, name="index"),
    path("conversations/new/", views.new_conversation, name="new"),
    path("conversations/<int:conversation_id>/", views.conversation_page, name="conversation"),
    path("conversations/<int:conversation_id>/rename/", views.rename, name="rename"),
    path("conversations/<int:conversation_id>/delete/", views.delete, name="delete"),
    path("conversations/<int:conversation_id>/settings/", views.update_settings, name="settings"),
    path("conversations/<int:conversation_id>/export/", views.export_conversation, name="export"),
    path("search/", views.search_page, name="search"),
]
