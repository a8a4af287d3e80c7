"""The room's books: the EO's account of every round, kept in the room's one SQLite database.

:mod:`~avatar.books.database` is the store (the connection, WAL, each owner's tables created on
opening, transactions and reads); :mod:`~avatar.books.tables` the round's own tables;
:mod:`~avatar.books.records` what their rows read as; :mod:`~avatar.books.ledger` the round's
queries and writes; :mod:`~avatar.books.rules` the booking rules they follow (what a seller's bid
puts in the books, which confirmation a booked Accept answers, which rounds a new one closes).
"""
