from django import template

from rules.presenters import condition_words, policy_words

register = template.Library()
register.filter("policy", policy_words)
register.filter("condition_words", condition_words)
