"""The Avatar Controller: the EO's human-side service that makes the avatars speak and gesture."""
