// RunBrowser, second part: run colours, the edits a user makes to runs
// (rename, notes, delete, baseline) and the context menu that offers them.
#include "widgets/panels/run_browser.h"

#include <QColorDialog>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QVBoxLayout>

#include "widgets/data/palette.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/run_browser_parts.h"
#include "widgets/data/qt_text.h"

namespace mlk {

using run_browser::kIdRole;

QIcon run_browser::colourSwatch(const QColor& colour) {
    QPixmap pm(14, 14);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(colour.darker(140));
    p.setBrush(colour);
    p.drawRoundedRect(QRectF(0.5, 0.5, 13, 13), 3, 3);
    return QIcon(pm);
}

// --- Colours -----------------------------------------------------------------

void RunBrowser::updateColours() {
    QSignalBlocker block(table_);
    for (int r = 0; r < table_->rowCount(); ++r) {
        if (auto* it = table_->item(r, ColColour)) {
            const QColor c = runColour(idAtRow(r));
            it->setIcon(run_browser::colourSwatch(c));
            it->setToolTip(tr("%1 \u2014 right-click \u2192 Change colour\u2026").arg(c.name()));
        }
    }
}

QColor RunBrowser::runColour(int64_t id) const {
    if (auto it = overrides_.find(id); it != overrides_.end()) return it->second;
    if (provider_) {
        const QColor c = provider_(id);
        if (c.isValid()) return c;
    }
    return palette::runColour(id);
}

void RunBrowser::setColourProvider(std::function<QColor(int64_t)> provider) {
    provider_ = std::move(provider);
    updateColours();
    updateDiff();
}

void RunBrowser::setRunColour(int64_t id, const QColor& c) {
    if (c.isValid()) overrides_[id] = c;
    else overrides_.erase(id);
    updateColours();
    updateDiff();
}

void RunBrowser::changeColour(int64_t id) {
    const QColor c = QColorDialog::getColor(runColour(id), this, tr("Colour of run %1").arg(id));
    if (!c.isValid()) return;
    setRunColour(id, c);
    emit colourChangeRequested(id, c);
}

// --- Edits -------------------------------------------------------------------

bool RunBrowser::renameRun(int64_t id, const QString& name) {
    const QString n = name.trimmed();
    auto it = rows_.find(id);
    if (!db_ || it == rows_.end() || n.isEmpty()) return false;
    editError_.clear();
    try {
        db_->renameRun(id, n.toStdString());
    } catch (const StoreError& e) {
        editError_ = qs(e.what());
        populate();
        return false;
    }
    it->second.summary.name = n.toStdString();
    refresh();
    emit runRenamed(id, n);
    return true;
}

bool RunBrowser::setNotes(int64_t id, const QString& notes) {
    auto it = rows_.find(id);
    if (!db_ || it == rows_.end()) return false;
    editError_.clear();
    try {
        db_->setNotes(id, notes.toStdString());
    } catch (const StoreError& e) {
        editError_ = qs(e.what());
        populate();
        return false;
    }
    it->second.notes = notes.toStdString();
    it->second.summary.updated.clear();  // force a re-read on refresh
    refresh();
    return true;
}

void RunBrowser::onItemChanged(QTableWidgetItem* item) {
    if (populating_ || !item || item->column() != ColName) return;
    const int64_t id = item->data(kIdRole).toLongLong();
    auto it = rows_.find(id);
    if (it == rows_.end()) return;
    const QString old = qs(it->second.summary.name);
    if (item->text().trimmed() == old) return;
    if (!renameRun(id, item->text())) {
        QSignalBlocker block(table_);
        item->setText(old);
    }
}

int RunBrowser::deleteRuns(const QList<int64_t>& ids) {
    if (!db_ || ids.isEmpty()) return 0;
    if (db_->readOnly()) {  // refused before the question, not after it
        editError_ = tr("%1 is read-only for you: its runs cannot be deleted").arg(QFileInfo(db_->path()).fileName());
        populate();
        return 0;
    }
    if (confirmDeletes_) {
        QString what;
        if (ids.size() == 1) {
            auto it = rows_.find(ids.front());
            what = tr("Delete run %1 \u201C%2\u201D with all its steps, samples and checkpoint files?")
                       .arg(ids.front())
                       .arg(it != rows_.end() ? qs(it->second.summary.name) : QString());
        } else {
            what = tr("Delete %n runs with all their steps, samples and checkpoint files?", nullptr,
                      static_cast<int>(ids.size()));
        }
        const auto answer =
            QMessageBox::question(this, tr("Delete runs"), what + QStringLiteral("\n\n") + tr("This cannot be undone."),
                                  QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) return 0;
    }
    QList<int64_t> done;
    editError_.clear();
    try {
        done = db_->deleteRuns(ids);
    } catch (const StoreError& e) {
        // Some may be gone: count them from what the store still holds.
        editError_ = qs(e.what());
        for (int64_t id : ids)
            if (!db_->runInfo(id)) done << id;
    }
    for (int64_t id : done) overrides_.erase(id);
    refresh();
    if (!done.isEmpty()) emit runsDeleted(done);
    return static_cast<int>(done.size());
}

void RunBrowser::setBaseline(std::optional<int64_t> id) {
    if (id && !rows_.count(*id)) return;
    if (baseline_ == id) return;
    baseline_ = id;
    populate();
    emit baselineChanged(id ? *id : -1);
}

// --- Dialogs and the context menu --------------------------------------------

void RunBrowser::editNotes(int64_t id) {
    auto it = rows_.find(id);
    if (it == rows_.end()) return;
    QDialog dlg(this);
    dlg.setWindowTitle(tr("Notes for run %1").arg(id));
    auto* l = new QVBoxLayout(&dlg);
    l->addWidget(new QLabel(tr("Notes for \u201C%1\u201D:").arg(qs(it->second.summary.name)), &dlg));
    auto* edit = new QPlainTextEdit(qs(it->second.notes), &dlg);
    l->addWidget(edit);
    auto* bb = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, &dlg);
    l->addWidget(bb);
    connect(bb, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
    connect(bb, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
    dlg.resize(420, 260);
    if (dlg.exec() == QDialog::Accepted) setNotes(id, edit->toPlainText());
}

void RunBrowser::showContextMenu(const QPoint& pos) {
    const QModelIndex idx = table_->indexAt(pos);
    if (idx.isValid() && !table_->selectionModel()->isRowSelected(idx.row(), QModelIndex()))
        selectRuns({idAtRow(idx.row())});
    const QList<int64_t> sel = selectedRunIds();
    QMenu menu(this);
    // A read-only database (Store::open) keeps its names, notes and runs.
    const bool readOnly = db_ && db_->readOnly();
    const auto edit = [&](QAction* a) {
        a->setEnabled(!readOnly);
        if (readOnly) a->setText(a->text() + tr(" (read-only database)"));
    };
    if (sel.size() == 1) {
        const int64_t id = sel.front();
        edit(menu.addAction(tr("Rename\u2026"), this, [this, id] {
            const int r = rowOf(id);
            if (r >= 0) table_->editItem(table_->item(r, ColName));
        }));
        edit(menu.addAction(tr("Notes\u2026"), this, [this, id] { editNotes(id); }));
        menu.addAction(tr("Change colour\u2026"), this, [this, id] { changeColour(id); });
        if (overrides_.count(id))
            menu.addAction(tr("Reset colour"), this, [this, id] {
                setRunColour(id, QColor());
                emit colourChangeRequested(id, QColor());
            });
        menu.addSeparator();
        if (baseline_ == id) menu.addAction(tr("Unpin baseline"), this, [this] { setBaseline(std::nullopt); });
        else menu.addAction(tr("Pin as baseline"), this, [this, id] { setBaseline(id); });
        menu.addSeparator();
    }
    if (sel.size() > 1) {
        const int64_t first = sel.front();
        if (baseline_ && sel.contains(*baseline_))
            menu.addAction(tr("Unpin baseline"), this, [this] { setBaseline(std::nullopt); });
        menu.addAction(tr("Pin run %1 (selected first) as baseline").arg(first), this,
                       [this, first] { setBaseline(first); });
        menu.addSeparator();
    }
    if (!sel.isEmpty())
        edit(menu.addAction(tr("Delete %n run(s)\u2026", nullptr, static_cast<int>(sel.size())), this,
                            [this, sel] { deleteRuns(sel); }));
    menu.addSeparator();
    menu.addAction(tr("Refresh"), this, [this] { refresh(); });
    menu.exec(table_->viewport()->mapToGlobal(pos));
}

}  // namespace mlk
