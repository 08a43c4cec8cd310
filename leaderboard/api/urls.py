"""Routes of ``/api/v1/``. Each area registers its viewsets on the router here."""


from rest_framework.routers import DefaultRouter

router = DefaultRouter()

urlpatterns = [
    *router.urls,
]
