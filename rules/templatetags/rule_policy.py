from django import template

from rules.presenters import policy_words

register = template.Library()
register.filter("policy", policy_words)
