"""Gymnasium environments of dpbandit."""
