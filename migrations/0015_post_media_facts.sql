-- Posts keep what the preflight knows of their media (probe and size, JSON):
-- src/services/social/media-rules.ts checks it against each network's rules.
ALTER TABLE `posts` ADD `media_facts` text;